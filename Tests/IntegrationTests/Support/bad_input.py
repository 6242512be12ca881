#!/usr/bin/env python3
"""The bad-input matrix (issue 7, point 5): hostile or broken input against running services, with pyzmq, msgpack
and raw sockets only (not the project's code).

  python3 bad_input.py --gateway tcp://127.0.0.1:P --control tcp://127.0.0.1:Q --catch-up tcp://127.0.0.1:R
                       [--app ID] [--case NAME ...] [--seed N] [--list] [--ingest-metrics http://HOST:PORT]

For each case: the attack, then a probe of all three services on fresh sockets: a normal batch of 2 records
(batchID "probe-<case>", user "probe-<case>") must be acknowledged with both accepted, a control command must be
answered with JSON, a catch-up request must be answered with {"head": …}. Prints one JSON line per case:
{"case", "target", "expect", "observed", "ok", "probe": {"gateway": accepted count or null, "control": bool,
"catchUp": bool}}, where "expect" says what the attack itself must get ("answer": an acknowledgement or reply that
refuses it, "no answer": the connection is dropped or the message skipped, unanswered) and "observed" what it got.
A final line {"done": true, "cases": N, "failed": [names]}. Exit status 0 when every case met its expectation and
every probe succeeded.

With --ingest-metrics (ingest's --metrics-endpoint), the lying-length row sends its frame header only once ingest has
taken the connection's accept (its /metrics count of gateway connections accepted has risen, with none open before):
ingest's log names the peer of a dropped connection from that accept, and under load it could come after the drop.

Keys (wrong keys, no keys, replayed CURVE handshakes) are in bad_input_curve.py, against services with CurveZMQ.
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import random
import socket as rawsocket
import struct
import sys
import time
import urllib.request
from urllib.parse import urlparse

import msgpack
import zmq

CONTEXT = zmq.Context()
MIB = 1 << 20


def tcp_address(endpoint):
    url = urlparse(endpoint)
    return url.hostname, url.port


def record(app, user, seq):
    return {"kind": "location", "app": app, "user": user, "seq": seq, "t": 1_780_000_000.0 + seq,
            "lat": -33.9, "lon": 18.4 + seq * 1e-4, "speed": 12.0, "hacc": 5.0}


def exchange(endpoint, kind, frames, timeout=3.0, max_size=None):
    """Sends one message on a fresh socket; returns the reply's frames, or None when nothing came in time."""
    sock = CONTEXT.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        sock.send_multipart(frames, copy=False)
        if not sock.poll(int(timeout * 1000)):
            return None
        return sock.recv_multipart()
    finally:
        sock.close(0)


def gateway_ack(endpoint, frames, timeout=3.0):
    reply = exchange(endpoint, zmq.DEALER, frames, timeout)
    if reply is None:
        return None
    try:
        return msgpack.unpackb(reply[-1], raw=False)
    except Exception:
        try:
            return json.loads(reply[-1])
        except Exception:
            return {"unreadable": True}


def zmtp_connection(endpoint, socket_type=b"DEALER"):
    """A raw TCP connection that has done the ZMTP 3.0 NULL handshake as a `socket_type`."""
    conn = rawsocket.create_connection(tcp_address(endpoint), timeout=5)
    conn.sendall(b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31)
    greeting = b""
    while len(greeting) < 64:
        chunk = conn.recv(64 - len(greeting))
        if not chunk:
            raise ConnectionError("no ZMTP greeting")
        greeting += chunk
    metadata = b"\x0bSocket-Type" + struct.pack(">I", len(socket_type)) + socket_type
    body = b"\x05READY" + metadata
    conn.sendall(b"\x04" + bytes([len(body)]) + body)
    return conn


def peer_closed(conn, timeout=3.0):
    """True when the server closes the connection within `timeout` (reads and drops whatever it sends first)."""
    conn.settimeout(0.2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = conn.recv(65536)
        except rawsocket.timeout:
            continue
        except OSError:
            return True
        if not data:
            return True
    return False


# MARK: cases. Each returns (expect, observed, ok).

def answered_refusal(ack):
    return isinstance(ack, dict) and ack.get("accepted") == 0 and bool(ack.get("rejected"))


def gateway_case(frames, timeout=5.0):
    def run(options):
        ack = gateway_ack(options.gateway, frames, timeout)
        if ack is None:
            return "answer", "no answer", False
        first = (ack.get("rejected") or [{}])[0] if isinstance(ack, dict) else {}
        return "answer", {"accepted": ack.get("accepted"), "first": first}, answered_refusal(ack)
    return run


def gateway_oversized(options):
    # Over the gateway socket's 64 MiB ZMQ_MAXMSGSIZE: libzmq drops the connection; nothing is answered.
    body = b"\x90" + b"\x00" * (64 * MIB + 16)
    ack = gateway_ack(options.gateway, [b"oversized", b"application/msgpack", body], timeout=4.0)
    return "no answer", "no answer" if ack is None else ack, ack is None


def gateway_connections(metrics):
    """Ingest's (accepted, open) gateway connections from its /metrics (posted every half second)."""
    with urllib.request.urlopen(metrics.rstrip("/") + "/metrics", timeout=5) as page:
        text = page.read().decode()
    values = {}
    for line in text.splitlines():
        for name in ("accepted_total", "open"):
            head = 'roadsave_ingest_connections_%s{socket="gateway"} ' % name
            if line.startswith(head):
                values[name] = float(line[len(head):])
    return values.get("accepted_total", -1), values.get("open", -1)


def wait_for(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def gateway_lying_length(options):
    # A frame header announcing 8 GiB, then a few bytes and silence: refused at the header (over the limit).
    # The port is reported so that the test can find the service's log line of this disconnect (its socket monitor),
    # which names the peer it read when it took the accept: with --ingest-metrics the header waits for that.
    accepted_before = None
    if options.ingest_metrics:
        # Every earlier connection's accept and close taken (none open), so the next accept counted is this one's.
        last = {}

        def quiet():
            last["accepted"], open_now = gateway_connections(options.ingest_metrics)
            return open_now == 0

        if not wait_for(quiet):
            return "connection closed", {"error": "gateway connections still open before the row"}, False
        accepted_before = last["accepted"]
    conn = zmtp_connection(options.gateway)
    port = conn.getsockname()[1]
    if accepted_before is not None and not wait_for(
            lambda: gateway_connections(options.ingest_metrics)[0] > accepted_before):
        conn.close()
        return "connection closed", {"error": "ingest did not count the accept", "port": port}, False
    conn.sendall(b"\x03" + struct.pack(">Q", 8 << 30) + b"\x00" * 1024)
    closed = peer_closed(conn)
    conn.close()
    return "connection closed", {"closed": closed, "port": port}, closed


def raw_garbage(endpoint_name):
    def run(options):
        rng = random.Random(options.seed)
        conn = rawsocket.create_connection(tcp_address(getattr(options, endpoint_name)), timeout=5)
        try:
            conn.sendall(bytes(rng.getrandbits(8) for _ in range(4096)))
        except OSError:
            pass
        closed = peer_closed(conn)
        conn.close()
        # libzmq may read random bytes as the start of an old ZMTP greeting and wait for the rest until the
        # services' handshake timeout (5 s): closed or held, what counts is that the service answers the probe.
        return "closed or held until the handshake timeout", "closed" if closed else "held", True
    return run


def deep_msgpack(depth):
    return b"\x91" * depth + b"\xc0"


def random_bodies(options):
    rng = random.Random(options.seed)
    refused = 0
    total = 20
    for index in range(total):
        size = rng.choice([1, 7, 100, 4096, 100_000])
        body = bytes(rng.getrandbits(8) for _ in range(size))
        content = rng.choice([b"application/msgpack", b"application/json"])
        ack = gateway_ack(options.gateway, [b"random-%d" % index, content, body])
        if isinstance(ack, dict) and ack.get("accepted") == 0:
            refused += 1
    return "answer", "%d of %d refused in their ack" % (refused, total), refused == total


def too_many_records(options):
    body = msgpack.packb([record(options.app, "too-many", n) for n in range(50_001)])
    return gateway_case([b"too-many", b"application/msgpack", body], timeout=20)(options)


def gateway_connection_flood(options):
    # 300 raw TCP connections held open, 200 DEALERs that send junk and go: the probe runs while the held ones stay.
    held = []
    for _ in range(300):
        try:
            held.append(rawsocket.create_connection(tcp_address(options.gateway), timeout=5))
        except OSError:
            break
    dealers = []
    for index in range(200):
        sock = CONTEXT.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(options.gateway)
        sock.send_multipart([b"flood-%d" % index, b"application/msgpack", b"\xc1"])
        dealers.append(sock)
    answered = 0
    deadline = time.monotonic() + 15
    for sock in dealers:
        if sock.poll(max(0, int((deadline - time.monotonic()) * 1000))):
            sock.recv_multipart()
            answered += 1
        sock.close(0)
    options.held = held
    return "answer", "%d of 200 answered with %d connections held" % (answered, len(held)), answered == 200


def json_reply_case(endpoint, frames, expect, refused):
    """A case that sends `frames` to a DEALER-facing socket answering JSON: it must answer with a refusal (`refused`
    of the parsed reply), or not at all when `expect` is "no answer"."""
    def run(options):
        reply = exchange(getattr(options, endpoint), zmq.DEALER, frames, timeout=4.0)
        if expect == "no answer":
            return expect, "no answer" if reply is None else "answered", reply is None
        if reply is None:
            return expect, "no answer", False
        try:
            parsed = json.loads(reply[-1])
        except ValueError:
            return expect, "not JSON", False
        return expect, parsed, isinstance(parsed, dict) and refused(parsed)
    return run


def control_case(frame, expect="answer"):
    return json_reply_case("control", [b"", frame], expect, lambda reply: reply.get("ok") is False)


def control_wrong_frames(options):
    # Three frames where one is expected: the last is read as the command and the others are echoed back.
    reply = exchange(options.control, zmq.DEALER, [b"x", b"y", b"{"], timeout=4.0)
    ok = reply is not None and len(reply) == 3 and json.loads(reply[-1]).get("ok") is False
    return "answer", "answered" if reply is not None else "no answer", ok


def catch_up_case(frames, expect="answer"):
    return json_reply_case("catch_up", frames, expect, lambda reply: "error" in reply)


CASES = [
    # (name, target, run)
    ("gateway-oversized-frame", "gateway", gateway_oversized),
    ("gateway-lying-length-header", "gateway", gateway_lying_length),
    ("gateway-not-zmtp", "gateway", raw_garbage("gateway")),
    ("gateway-one-frame", "gateway", gateway_case([b"only-one"])),
    ("gateway-two-frames", "gateway", gateway_case([b"two", b"application/msgpack"])),
    ("gateway-five-frames", "gateway", gateway_case([b"five", b"application/msgpack", b"\x90", b"x", b"y"])),
    ("gateway-empty-frames", "gateway", gateway_case([b"", b"", b""])),
    ("gateway-unknown-content-type", "gateway", gateway_case([b"ct", b"text/plain", b"[]"])),
    ("gateway-random-bodies", "gateway", random_bodies),
    ("gateway-deep-msgpack", "gateway", gateway_case([b"deep", b"application/msgpack", deep_msgpack(200_000)])),
    ("gateway-deep-json", "gateway", gateway_case([b"deep-json", b"application/json", b"[" * 500_000])),
    ("gateway-lying-msgpack-array", "gateway",
     gateway_case([b"lying-array", b"application/msgpack", b"\xdd\xff\xff\xff\xff" + b"\xc0" * 16])),
    ("gateway-lying-msgpack-string", "gateway",
     gateway_case([b"lying-str", b"application/msgpack", b"\x91\x81\xa3app\xdb\xff\xff\xff\xf0abc"])),
    ("gateway-not-a-batch", "gateway", gateway_case([b"map", b"application/msgpack", msgpack.packb({"a": 1})])),
    ("gateway-too-many-records", "gateway", too_many_records),
    ("gateway-connection-flood", "gateway", gateway_connection_flood),
    ("control-oversized-frame", "control", control_case(b"{" + b" " * (128 << 10) + b"}", expect="no answer")),
    ("control-not-zmtp", "control", raw_garbage("control")),
    ("control-not-json", "control", control_case(b"\xff\xfe not json")),
    ("control-empty", "control", control_case(b"")),
    ("control-array", "control", control_case(b"[1,2,3]")),
    ("control-deep-json", "control", control_case(b"[" * 60_000)),
    ("control-unknown-command", "control", control_case(b'{"command":"formatDisk","app":"demo-app"}')),
    ("control-wrong-types", "control", control_case(b'{"command":42,"app":["x"],"user":{}}')),
    ("control-wrong-frame-count", "control", control_wrong_frames),
    ("catch-up-oversized-frame", "catch-up", catch_up_case([b"{" + b" " * (128 << 10) + b"}"], expect="no answer")),
    ("catch-up-not-zmtp", "catch-up", raw_garbage("catch_up")),
    ("catch-up-not-json", "catch-up", catch_up_case([b"\x00\x01garbage"])),
    ("catch-up-deep-json", "catch-up", catch_up_case([b"[" * 60_000])),
    ("catch-up-bad-members", "catch-up", catch_up_case([b'{"after":-1,"max":1e12,"prefix":7}'])),
    ("catch-up-ahead-of-head", "catch-up", catch_up_case([b'{"after":9007199254740991}'])),
    ("catch-up-wrong-frame-count", "catch-up", catch_up_case([b"a", b"b", b"c"], expect="no answer")),
]


def probe(options, name):
    result = {}
    user = "probe-" + name
    body = msgpack.packb([record(options.app, user, 1), record(options.app, user, 2)])
    ack = gateway_ack(options.gateway, [user.encode(), b"application/msgpack", body], timeout=10)
    control = exchange(options.control, zmq.REQ, [probe_command(options, user)], 10)
    catch_up = exchange(options.catch_up, zmq.REQ, CATCH_UP_PROBE, 10)
    return probe_result(ack, control, catch_up)


# MARK: shared with bad_input_curve.py (the same probe and report, over CurveZMQ there)

CATCH_UP_PROBE = [b'{"after": 0, "max": 1}']


def probe_command(options, user):
    return json.dumps({"command": "stopMonitoring", "app": options.app, "user": user}).encode()


def probe_result(ack, control_reply, catch_up_reply):
    """{"gateway": accepted count or None, "control": answered with a JSON object, "catchUp": answered with a head}."""
    result = {"gateway": ack.get("accepted") if isinstance(ack, dict) else None}
    try:
        result["control"] = control_reply is not None and isinstance(json.loads(control_reply[-1]), dict)
    except ValueError:
        result["control"] = False
    try:
        result["catchUp"] = catch_up_reply is not None and "head" in json.loads(catch_up_reply[-1])
    except ValueError:
        result["catchUp"] = False
    return result


def run_matrix(options, cases, probe_after):
    """--list, or each selected case then `probe_after(options, name)`: one JSON line a case and a summary line.
    Returns the exit status (0 when every case met its expectation and every probe succeeded)."""
    if options.list:
        for name, target, _ in cases:
            print(name, target)
        return 0
    failed = []
    cases = [case for case in cases if options.case is None or case[0] in options.case]
    for name, target, run in cases:
        options.held = []
        started = time.monotonic()
        try:
            expect, observed, ok = run(options)
        except Exception as error:  # the attack itself failing is a result too
            expect, observed, ok = "?", "attack failed: %r" % (error,), False
        checked = probe_after(options, name)
        for conn in options.held:
            conn.close()
        probe_ok = checked["gateway"] == 2 and checked["control"] and checked["catchUp"]
        if not (ok and probe_ok):
            failed.append(name)
        print(json.dumps({"case": name, "target": target, "expect": expect, "observed": observed, "ok": ok,
                          "probe": checked, "seconds": round(time.monotonic() - started, 2)}, default=str)[:2000],
              flush=True)
    print(json.dumps({"done": True, "cases": len(cases), "failed": failed}), flush=True)
    return 0 if not failed else 1


def main():
    parser = argparse.ArgumentParser(description="the bad-input matrix against running services")
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--catch-up", dest="catch_up", required=True)
    parser.add_argument("--app", default="demo-app")
    parser.add_argument("--case", action="append", default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--ingest-metrics", dest="ingest_metrics", default=None,
                        help="ingest's metrics URL (http://HOST:PORT): the lying-length row waits for its accept")
    return run_matrix(parser.parse_args(), CASES, probe)


if __name__ == "__main__":
    sys.exit(main())
