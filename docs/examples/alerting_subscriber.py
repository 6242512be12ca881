#!/usr/bin/env python3
"""A subscriber that misses nothing across reconnects: the recipe of docs/PROTOCOL.md §7 ("Events"), runnable.

  python3 alerting_subscriber.py [--endpoint tcp://127.0.0.1:5554] [--catch-up-endpoint tcp://127.0.0.1:5555]
                                 [--subscribe PREFIX ...] [--since POSITION]
                                 [--server-key SERVER.key.pub --key CLIENT.key] [--timeout S]

Prints each event once, as one JSON line {"position": P, "event": {...}, "via": "live" | "catch-up"}, whatever
happens to the connection: the notifier restarting, a network blip or a silent partition (found by heartbeats), or a
reload of subscriber keys that drops every live connection. libzmq reconnects a SUB by itself and says nothing; what the notifier published meanwhile is not
resent on the live socket. So the subscriber watches its own socket's handshakes (a monitor) and, on every one,
asks the catch-up endpoint for what came after the last position it saw; once more a second later, for an event
published in the moment between that answer and its subscription taking effect at the notifier. Positions seen
are dropped (live and catch-up overlap by design); each catch-up done is said on standard error as {"resynced":
LAST}. Needs pyzmq only; --server-key and --key are ZeroMQ certificate
files (`roadsave keygen`), the same key for both endpoints.
"""
import argparse
import json
import sys
import time

import zmq
import zmq.auth

RESYNC_AGAIN_AFTER = 1.0  # seconds after a handshake: the second catch-up
HANDSHAKE_EVENTS = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_CONNECTED

# How a dead connection is noticed (docs/operating.md, "Links"): a connection whose peer vanished without a word (a cut
# link, a NAT or load balancer that forgot it while no event came) stays open for up to fifteen minutes unless ZMTP
# heartbeats find it. With these, it is dropped within about 4 s, made anew as soon as the link carries again, and the
# handshake of the new one starts a catch-up: the next crash alert arrives live. The services' own defaults.
LINK_OPTIONS = {
    zmq.HEARTBEAT_IVL: 1000,  # ms between PINGs
    zmq.HEARTBEAT_TIMEOUT: 3000,  # ms without anything back after a PING: the connection is dead
    zmq.HEARTBEAT_TTL: 3000,  # asks the notifier to drop it too after as long without a PING
    zmq.CONNECT_TIMEOUT: 2000,  # ms one attempt to connect may take
    zmq.RECONNECT_IVL: 100,  # first pause before connecting again
    zmq.RECONNECT_IVL_MAX: 1000,  # longest pause, after failures
    zmq.HANDSHAKE_IVL: 3000,  # a handshake that hangs (the link failed during it) is given up
}


def main():
    parser = argparse.ArgumentParser(description="print every event once, catching up on every reconnect")
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5554")
    parser.add_argument("--catch-up-endpoint", default="tcp://127.0.0.1:5555")
    parser.add_argument("--subscribe", action="append", default=[], help="topic prefix (default: every event)")
    parser.add_argument("--since", type=int, help="first the events after this position (default: from now)")
    parser.add_argument("--server-key", help="the notifier's public certificate: CurveZMQ")
    parser.add_argument("--key", help="this subscriber's secret certificate")
    parser.add_argument("--timeout", type=float, help="exit after this many seconds")
    options = parser.parse_args()

    context = zmq.Context()

    def secured(kind):
        sock = context.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        for option, value in LINK_OPTIONS.items():
            sock.setsockopt(option, value)
        if options.server_key:
            sock.curve_serverkey = zmq.auth.load_certificate(options.server_key)[0]
            sock.curve_publickey, sock.curve_secretkey = zmq.auth.load_certificate(options.key)
        return sock

    live = secured(zmq.SUB)
    prefixes = options.subscribe or [""]
    for prefix in prefixes:
        live.setsockopt(zmq.SUBSCRIBE, prefix.encode())
    # CURVE connections are ready at HANDSHAKE_SUCCEEDED; plaintext ones at CONNECTED (their handshake is not reported
    # on every libzmq): either starts a catch-up. The monitor is set before connect, so the first is seen too.
    monitor = live.get_monitor_socket(HANDSHAKE_EVENTS if not options.server_key else zmq.EVENT_HANDSHAKE_SUCCEEDED)
    live.connect(options.endpoint)
    catch_up = secured(zmq.DEALER)
    catch_up.connect(options.catch_up_endpoint)

    seen = set()  # positions printed (a long-running subscriber would keep only those after a low-water mark)
    last = options.since  # the highest position printed; None: nothing yet

    def deliver(position, event, via):
        nonlocal last
        if position in seen:
            return
        seen.add(position)
        last = position if last is None else max(last, position)
        print(json.dumps({"position": position, "event": event, "via": via}), flush=True)

    def ask(request):
        """One catch-up request; its reply, or None (said on standard output) when it failed."""
        catch_up.send(json.dumps(request).encode())
        if not catch_up.poll(10_000):
            print(json.dumps({"warning": "catch-up did not answer", "request": request}), flush=True)
            return None
        reply = json.loads(catch_up.recv())
        if "error" in reply:
            print(json.dumps({"warning": reply["error"], "request": request}), flush=True)
            return None
        return reply

    def resync():
        """Everything after `last` that the catch-up endpoint has, page by page up to its head, for each prefix."""
        nonlocal last
        if last is None:
            # Nothing seen and no --since: this subscriber starts from the head at its first connection.
            reply = ask({"after": 0, "max": 1})
            if reply is not None:
                last = reply["head"]
                print(json.dumps({"resynced": last}), file=sys.stderr, flush=True)
            return
        start = last
        for prefix in prefixes:
            after = start
            while True:
                request = {"after": after, "max": 1000}
                if prefix:
                    request["prefix"] = prefix
                reply = ask(request)
                if reply is None:
                    return
                for item in reply["events"]:
                    deliver(item["position"], item["event"], "catch-up")
                if reply["next"] >= reply["head"]:
                    break
                after = reply["next"]
        print(json.dumps({"resynced": last}), file=sys.stderr, flush=True)

    resync_at = []  # when to catch up next (monotonic seconds)
    if options.since is not None:
        resync_at.append(time.monotonic())
    deadline = time.monotonic() + options.timeout if options.timeout else None
    poller = zmq.Poller()
    poller.register(live, zmq.POLLIN)
    poller.register(monitor, zmq.POLLIN)
    while deadline is None or time.monotonic() < deadline:
        now = time.monotonic()
        if resync_at and resync_at[0] <= now:
            resync_at.pop(0)
            resync()
        waits = [at - now for at in resync_at] + ([deadline - now] if deadline else [])
        ready = dict(poller.poll(max(1, int(min(waits) * 1000)) if waits else None))
        if monitor in ready:
            while monitor.poll(0):
                monitor.recv_multipart()  # [event and value, endpoint]: which one does not matter here
                resync_at = [time.monotonic(), time.monotonic() + RESYNC_AGAIN_AFTER]
        while live in ready and live.poll(0):
            frames = live.recv_multipart()
            if len(frames) >= 3:
                deliver(int(frames[2]), json.loads(frames[1]), "live")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
