#!/usr/bin/env python3
"""The bad-input matrix with keys (issue 7, point 5): hostile or broken CurveZMQ clients against services that run
with CURVE keys and an allow-list, with pyzmq, msgpack and raw sockets only (not the project's code).

  python3 bad_input_curve.py --gateway EP --control EP --catch-up EP --subscribers EP --keys DIR --allow FILE
                             --ingest-pid PID [--app ID] [--case NAME ...] [--seed N] [--list]

DIR holds the servers' public keys (ingest.key.pub, detect.key.pub, notify.key.pub) and the clients' certificates:
gw.key (gateway), op.key (operator), sub.key (subscriber), revoked.key (a gateway key the "revoked" row removes from
FILE and then sends SIGHUP to PID). After each case a probe with the listed keys: a batch of 2 records (batchID and
user "probe-<case>") must be acknowledged with both accepted, a control command answered, a catch-up request answered.
Output as bad_input.py: one JSON line per case, then {"done": true, "cases": N, "failed": [...]}; exit status 0 when
every case met its expectation and every probe succeeded.

Batches the attacks get accepted on purpose (the journal must hold each exactly once): "replay-original" and
"replay-live", "corrupt-original" and "hello-source" (1 record each, sent by real clients through the recording proxy), "revoke-before" (1 record,
before the key is revoked). A replayed handshake or message must never store a second copy.
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import os
import random
import select
import socket as rawsocket
import struct
import sys
import threading
import time

import msgpack
import zmq
import zmq.auth

from bad_input import CATCH_UP_PROBE, CONTEXT, peer_closed, probe_command, probe_result, record, run_matrix, tcp_address
import client_common


# MARK: keys and clients

def certificate(options, name):
    return zmq.auth.load_certificate(os.path.join(options.keys, name))


def server_key(options, target):
    return certificate(options, {"gateway": "ingest.key.pub", "control": "detect.key.pub",
                                 "catch_up": "notify.key.pub", "subscribers": "notify.key.pub"}[target])[0]


def client_socket(kind, endpoint, server=None, pair=None):
    """A pyzmq socket; a CURVE client when `server` is given (with `pair`, or a fresh key pair nobody listed)."""
    sock = client_common.client_socket(CONTEXT, kind, server, pair)
    sock.connect(endpoint)
    return sock


def exchange(endpoint, kind, frames, server=None, pair=None, timeout=3.0):
    sock = client_socket(kind, endpoint, server, pair)
    try:
        sock.send_multipart(frames)
        if not sock.poll(int(timeout * 1000)):
            return None
        return sock.recv_multipart()
    finally:
        sock.close(0)


def batch(options, batch_id, user=None, count=1):
    body = msgpack.packb([record(options.app, user or batch_id, seq) for seq in range(1, count + 1)])
    return [batch_id.encode(), b"application/msgpack", body]


def parse_ack(reply):
    if reply is None:
        return None
    try:
        return msgpack.unpackb(reply[-1], raw=False)
    except Exception:
        return {"unreadable": True}


def control_frames():
    return [json.dumps({"command": "stopMonitoring", "app": "demo-app", "user": "curve-attacker"}).encode()]


def request_for(target, options):
    """(endpoint, socket type, frames) of a normal request to `target`."""
    return {
        "gateway": (options.gateway, zmq.DEALER, batch(options, "attack")),
        "control": (options.control, zmq.REQ, control_frames()),
        "catch_up": (options.catch_up, zmq.REQ, CATCH_UP_PROBE),
    }[target]


def no_answer(target, server=None, pair=None):
    """A case whose request must get no answer at all (refused at the handshake)."""
    def run(options):
        endpoint, kind, frames = request_for(target, options)
        reply = exchange(endpoint, kind, frames, server(options) if server else None,
                         pair(options) if pair else None, timeout=2.5)
        return "no answer", "no answer" if reply is None else "answered: %r" % (reply[-1][:120],), reply is None
    return run


def subscriber_refused(server=None, pair=None):
    """A SUB client on the PUB socket: its handshake must never succeed (the client's own monitor says)."""
    def run(options):
        sock = client_common.client_socket(CONTEXT, zmq.SUB, server(options) if server else None,
                                           pair(options) if pair else None)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
                                          | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        sock.connect(options.subscribers)
        seen = []
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            if monitor.poll(100):
                event = monitor.recv_multipart()[0]
                seen.append(struct.unpack("<HI", event[:6])[0])
        sock.disable_monitor()
        monitor.close(0)
        sock.close(0)
        succeeded = zmq.EVENT_HANDSHAKE_SUCCEEDED in seen
        return "handshake refused", "events %s" % sorted(set(seen)), not succeeded and bool(seen)
    return run


def listed(name):
    return lambda options: certificate(options, name)


def other_server(options):
    # A real server's public key, but not this server's: the client's HELLO cannot be opened.
    return certificate(options, "detect.key.pub")[0]


# MARK: the recording proxy

class RecordingProxy:
    """One TCP connection relayed to `endpoint`; the client's bytes are recorded and more can be injected."""

    def __init__(self, endpoint):
        self.upstream_address = tcp_address(endpoint)
        self.listener = rawsocket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.endpoint = "tcp://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.recorded = bytearray()
        self.upstream_closed = threading.Event()
        self.lock = threading.Lock()
        self.upstream = None
        threading.Thread(target=self.relay, daemon=True).start()

    def relay(self):
        client, _ = self.listener.accept()
        self.listener.close()
        self.upstream = rawsocket.create_connection(self.upstream_address)
        pairs = {client: self.upstream, self.upstream: client}
        try:
            while True:
                readable, _, _ = select.select(list(pairs), [], [], 0.2)
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        if source is self.upstream:
                            self.upstream_closed.set()
                        return
                    if source is client:
                        self.recorded += data
                        with self.lock:
                            self.upstream.sendall(data)
                    else:
                        client.sendall(data)
        except OSError:
            self.upstream_closed.set()
        finally:
            self.upstream_closed.set()
            client.close()
            self.upstream.close()

    def inject(self, data):
        with self.lock:
            self.upstream.sendall(data)


def zmtp_frames(data):
    """The frames of a ZMTP 3 stream after its 64-byte greeting: [(start, end, flags, body)]."""
    frames = []
    position = 64
    while position + 2 <= len(data):
        flags = data[position]
        if flags & 0x02:
            if position + 9 > len(data):
                break
            size = struct.unpack(">Q", bytes(data[position + 1:position + 9]))[0]
            header = 9
        else:
            size = data[position + 1]
            header = 2
        end = position + header + size
        if end > len(data):
            break
        frames.append((position, end, flags, bytes(data[position + header:end])))
        position = end
    return frames


def command_name(body):
    return body[1:1 + body[0]] if body else b""


def recorded_session(options, batch_id):
    """A real CURVE client (gw.key) sends `batch_id` through a recording proxy and gets its ack.
    Returns (proxy, client socket, ack, frames of the recorded client bytes)."""
    proxy = RecordingProxy(options.gateway)
    client = client_socket(zmq.DEALER, proxy.endpoint, server_key(options, "gateway"), certificate(options, "gw.key"))
    client.send_multipart(batch(options, batch_id))
    ack = parse_ack(client.recv_multipart() if client.poll(10_000) else None)
    time.sleep(0.2)
    return proxy, client, ack, zmtp_frames(proxy.recorded)


def messages_of(frames):
    return [frame for frame in frames if command_name(frame[3]) == b"MESSAGE"]


def replayed_handshake(options):
    # Every byte the real client sent (greeting, HELLO, INITIATE, its MESSAGEs), verbatim, on a new connection: the
    # server answers HELLO with a new cookie, so the old INITIATE cannot be opened and the connection is dropped.
    proxy, client, ack, frames = recorded_session(options, "replay-original")
    client.close(0)
    names = [command_name(frame[3]) for frame in frames]
    conn = rawsocket.create_connection(tcp_address(options.gateway), timeout=5)
    conn.sendall(bytes(proxy.recorded))
    closed = peer_closed(conn, timeout=6)
    conn.close()
    ok = isinstance(ack, dict) and ack.get("accepted") == 1 and b"INITIATE" in names and closed
    return ("original acked, replay dropped", {"originalAck": ack and ack.get("accepted"),
                                              "recorded": [name.decode() for name in names], "replayClosed": closed}, ok)


def replay_inside_live_connection(options):
    # The first message's MESSAGE commands sent again inside the same, live connection: their nonces are not new,
    # so the server must drop the connection and store nothing (the journal holds "replay-live" once).
    proxy, client, ack, frames = recorded_session(options, "replay-live")
    messages = messages_of(frames)
    if messages:
        proxy.inject(b"".join(bytes(proxy.recorded[start:end]) for start, end, _, _ in messages))
    second = client.poll(3000)
    dropped = proxy.upstream_closed.wait(5)
    client.close(0)
    ok = isinstance(ack, dict) and ack.get("accepted") == 1 and bool(messages) and not second and dropped
    return ("original acked, replay dropped unanswered",
            {"originalAck": ack and ack.get("accepted"), "messages": len(messages), "secondAck": second,
             "dropped": dropped}, ok)


def corrupted_message_inside_live_connection(options):
    # A MESSAGE with a newer nonce and a flipped byte in its box, inside a live connection: the box does not open.
    proxy, client, ack, frames = recorded_session(options, "corrupt-original")
    messages = messages_of(frames)
    if messages:
        start, end, flags, body = messages[-1]
        prefix = 1 + body[0]
        nonce = struct.unpack(">Q", body[prefix:prefix + 8])[0] + 1000
        box = bytearray(body[prefix + 8:])
        box[len(box) // 2] ^= 0xFF
        forged = body[:prefix] + struct.pack(">Q", nonce) + bytes(box)
        header = bytes([flags & ~0x02, len(forged)]) if len(forged) < 256 else \
            bytes([flags | 0x02]) + struct.pack(">Q", len(forged))
        proxy.inject(header + forged)
    second = client.poll(3000)
    dropped = proxy.upstream_closed.wait(5)
    client.close(0)
    ok = isinstance(ack, dict) and ack.get("accepted") == 1 and bool(messages) and not second and dropped
    return ("forged message dropped", {"originalAck": ack and ack.get("accepted"), "dropped": dropped}, ok)


def greeting_and_hello(options):
    """The greeting and HELLO of a real CURVE client, recorded (a HELLO is valid for anyone who knows the server)."""
    proxy, client, ack, frames = recorded_session(options, "hello-source")
    client.close(0)
    hello = next(frame for frame in frames if command_name(frame[3]) == b"HELLO")
    return bytes(proxy.recorded[:hello[1]])


def garbage_after_hello(options):
    prefix = options.hello or greeting_and_hello(options)
    options.hello = prefix
    conn = rawsocket.create_connection(tcp_address(options.gateway), timeout=5)
    conn.sendall(prefix)
    answer = b""
    conn.settimeout(3)
    try:
        while len(answer) < 64 + 170:
            chunk = conn.recv(4096)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    welcomed = b"\x07WELCOME" in answer
    rng = random.Random(options.seed)
    try:
        conn.sendall(bytes(rng.getrandbits(8) for _ in range(4096)))
    except OSError:
        pass
    closed = peer_closed(conn, timeout=6)
    conn.close()
    return "WELCOME, then dropped", {"welcomed": welcomed, "closed": closed}, welcomed and closed


def oversized_after_handshake(target, size):
    def run(options):
        endpoint, kind, _ = request_for(target, options)
        key = {"gateway": "gw.key", "control": "op.key", "catch_up": "sub.key"}[target]
        frames = [b"oversized", b"application/msgpack", b"\x90" + b"\x00" * size] if target == "gateway" \
            else [b"{" + b" " * size + b"}"]
        reply = exchange(endpoint, kind, frames, server_key(options, target), certificate(options, key), timeout=5)
        return "no answer", "no answer" if reply is None else "answered", reply is None
    return run


def malformed_after_handshake(options):
    # Listed keys, well-formed ZMTP, bodies that are not: each refused in its answer.
    gw = certificate(options, "gw.key")
    ack = parse_ack(exchange(options.gateway, zmq.DEALER, [b"bad-body", b"application/msgpack", b"\xc1\xff\x00"],
                             server_key(options, "gateway"), gw))
    control = exchange(options.control, zmq.REQ, [b"\xff not json"], server_key(options, "control"),
                       certificate(options, "op.key"))
    catch_up = exchange(options.catch_up, zmq.REQ, [b"[" * 1000], server_key(options, "catch_up"),
                        certificate(options, "sub.key"))
    ok = isinstance(ack, dict) and ack.get("accepted") == 0 and control is not None and catch_up is not None
    return "refused in the answer", {"gateway": ack, "control": control is not None,
                                     "catchUp": catch_up is not None}, ok


def revoked_while_connected(options):
    # A listed key sends a batch (acked), is removed from the allow-list and SIGHUP re-reads it; the next batch on
    # the same connection stores nothing, and a new connection with the key is refused at the handshake.
    pair = certificate(options, "revoked.key")
    sock = client_socket(zmq.DEALER, options.gateway, server_key(options, "gateway"), pair)
    sock.send_multipart(batch(options, "revoke-before"))
    before = parse_ack(sock.recv_multipart() if sock.poll(10_000) else None)
    public = pair[0].decode()
    with open(options.allow) as handle:
        lines = handle.read().splitlines()
    with open(options.allow, "w") as handle:
        handle.write("\n".join(line for line in lines if public not in line) + "\n")
    os.kill(options.ingest_pid, signal.SIGHUP)
    time.sleep(1.5)
    sock.send_multipart(batch(options, "revoke-after"))
    after = parse_ack(sock.recv_multipart() if sock.poll(5000) else None)
    sock.close(0)
    fresh = exchange(options.gateway, zmq.DEALER, batch(options, "revoke-new-connection"),
                     server_key(options, "gateway"), pair, timeout=2.5)
    ok = (isinstance(before, dict) and before.get("accepted") == 1
          and (after is None or (isinstance(after, dict) and after.get("accepted") == 0)) and fresh is None)
    return "acked, then refused", {"before": before and before.get("accepted"),
                                   "after": after if after is None else {"accepted": after.get("accepted"),
                                                                         "first": (after.get("rejected") or [{}])[0]},
                                   "newConnection": "no answer" if fresh is None else "answered"}, ok


def handshake_flood(options):
    # 200 raw connections that each send a recorded greeting and HELLO (the server computes a WELCOME for each) and
    # stay open, and 100 pyzmq clients with fresh, unlisted keys that send a batch: none is answered, and the probe
    # runs while the raw ones are held.
    prefix = options.hello or greeting_and_hello(options)
    options.hello = prefix
    held = []
    for _ in range(200):
        try:
            conn = rawsocket.create_connection(tcp_address(options.gateway), timeout=5)
            conn.sendall(prefix)
            held.append(conn)
        except OSError:
            break
    strangers = [client_socket(zmq.DEALER, options.gateway, server_key(options, "gateway")) for _ in range(100)]
    for index, sock in enumerate(strangers):
        sock.send_multipart(batch(options, "flood-%d" % index))
    answered = 0
    deadline = time.monotonic() + 3
    for sock in strangers:
        if sock.poll(max(0, int((deadline - time.monotonic()) * 1000))):
            answered += 1
        sock.close(0)
    options.held = held
    return "no stranger answered", "%d of 100 answered, %d handshakes held" % (answered, len(held)), \
        answered == 0 and len(held) == 200


def silent_connection(endpoint_name):
    # A TCP connection that never says a word is dropped at the services' handshake timeout (5 s), not libzmq's 30 s.
    def run(options):
        conn = rawsocket.create_connection(tcp_address(getattr(options, endpoint_name)), timeout=5)
        started = time.monotonic()
        closed = peer_closed(conn, timeout=10)
        seconds = round(time.monotonic() - started, 2)
        conn.close()
        return "dropped within 4-7 s", {"closed": closed, "seconds": seconds}, closed and 4.0 <= seconds <= 7.0
    return run


CASES = [
    ("gateway-unlisted-key", "gateway", no_answer("gateway", lambda o: server_key(o, "gateway"))),
    ("control-unlisted-key", "control", no_answer("control", lambda o: server_key(o, "control"))),
    ("catch-up-unlisted-key", "catch-up", no_answer("catch_up", lambda o: server_key(o, "catch_up"))),
    ("subscribers-unlisted-key", "subscribers", subscriber_refused(lambda o: server_key(o, "subscribers"))),
    ("gateway-wrong-server-key", "gateway", no_answer("gateway", other_server, listed("gw.key"))),
    ("control-wrong-server-key", "control",
     no_answer("control", lambda o: server_key(o, "gateway"), listed("op.key"))),
    ("gateway-plaintext", "gateway", no_answer("gateway")),
    ("control-plaintext", "control", no_answer("control")),
    ("catch-up-plaintext", "catch-up", no_answer("catch_up")),
    ("subscribers-plaintext", "subscribers", subscriber_refused()),
    ("control-gateway-key", "control", no_answer("control", lambda o: server_key(o, "control"), listed("gw.key"))),
    ("gateway-operator-key", "gateway", no_answer("gateway", lambda o: server_key(o, "gateway"), listed("op.key"))),
    ("catch-up-operator-key", "catch-up",
     no_answer("catch_up", lambda o: server_key(o, "catch_up"), listed("op.key"))),
    ("subscribers-operator-key", "subscribers",
     subscriber_refused(lambda o: server_key(o, "subscribers"), listed("op.key"))),
    ("gateway-replayed-handshake", "gateway", replayed_handshake),
    ("gateway-replay-inside-live-connection", "gateway", replay_inside_live_connection),
    ("gateway-forged-message-inside-live-connection", "gateway", corrupted_message_inside_live_connection),
    ("gateway-garbage-after-hello", "gateway", garbage_after_hello),
    ("gateway-oversized-after-handshake", "gateway", oversized_after_handshake("gateway", 64 * (1 << 20) + 16)),
    ("control-oversized-after-handshake", "control", oversized_after_handshake("control", 128 << 10)),
    ("catch-up-oversized-after-handshake", "catch-up", oversized_after_handshake("catch_up", 128 << 10)),
    ("malformed-bodies-after-handshake", "all", malformed_after_handshake),
    ("gateway-key-revoked-by-sighup", "gateway", revoked_while_connected),
    ("gateway-handshake-flood", "gateway", handshake_flood),
    ("gateway-silent-connection", "gateway", silent_connection("gateway")),
    ("control-silent-connection", "control", silent_connection("control")),
    ("catch-up-silent-connection", "catch-up", silent_connection("catch_up")),
]


def probe(options, name):
    user = "probe-" + name
    ack = parse_ack(exchange(options.gateway, zmq.DEALER, batch(options, user, count=2),
                             server_key(options, "gateway"), certificate(options, "gw.key"), timeout=10))
    control = exchange(options.control, zmq.REQ, [probe_command(options, user)],
                       server_key(options, "control"), certificate(options, "op.key"), timeout=10)
    catch_up = exchange(options.catch_up, zmq.REQ, CATCH_UP_PROBE, server_key(options, "catch_up"),
                        certificate(options, "sub.key"), timeout=10)
    return probe_result(ack, control, catch_up)


def main():
    parser = argparse.ArgumentParser(description="the bad-input matrix with keys against running services")
    for flag in ("--gateway", "--control", "--catch-up", "--subscribers", "--keys", "--allow"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--ingest-pid", type=int, required=True)
    parser.add_argument("--app", default="demo-app")
    parser.add_argument("--case", action="append", default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--list", action="store_true")
    options = parser.parse_args()
    options.hello = None  # the recorded greeting and HELLO, made once when a case needs it
    return run_matrix(options, CASES, probe)


if __name__ == "__main__":
    sys.exit(main())
