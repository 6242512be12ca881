#!/usr/bin/env python3
"""A subscriber for the live-publish security tests: pyzmq only (not the project's code).

  python3 live_subscriber.py --endpoint tcp://127.0.0.1:5554 --server-key SERVER.key.pub --key CLIENT.key
                             [--subscribe PREFIX ...] [--unsubscribe PREFIX@SECONDS ...] [--timeout S]

An XSUB socket, so nothing is filtered on this side: every message the notifier sends is printed, as one JSON line
{"t": seconds since start, "topic": TOPIC, "position": P}. Subscribes to each --subscribe prefix (none: everything),
and at each PREFIX@SECONDS sends the unsubscription of PREFIX, printing {"t": …, "unsubscribed": PREFIX}.
Prints {"connected": ENDPOINT} on standard error when the handshake is done. Exits after --timeout seconds.
"""
import signal

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import time

import zmq

from client_common import add_curve_arguments, client_socket_from_options, exit_now, report_handshakes


def main():
    parser = argparse.ArgumentParser(description="print every message the notifier sends to this subscriber")
    parser.add_argument("--endpoint", required=True)
    add_curve_arguments(parser, required=True)
    parser.add_argument("--subscribe", action="append", default=[])
    parser.add_argument("--unsubscribe", action="append", default=[], help="PREFIX@SECONDS")
    parser.add_argument("--timeout", type=float, default=20.0)
    options = parser.parse_args()

    socket = client_socket_from_options(zmq.Context(), zmq.XSUB, options)
    report_handshakes(socket)
    # XSUB keeps its subscriptions and sends them on every (re)connection.
    for prefix in options.subscribe or [""]:
        socket.send(b"\x01" + prefix.encode())
    socket.connect(options.endpoint)

    pending = sorted((float(item.rsplit("@", 1)[1]), item.rsplit("@", 1)[0]) for item in options.unsubscribe)
    start = time.monotonic()
    while True:
        now = time.monotonic() - start
        while pending and pending[0][0] <= now:
            prefix = pending.pop(0)[1]
            socket.send(b"\x00" + prefix.encode())
            print(json.dumps({"t": now, "unsubscribed": prefix}), flush=True)
        limit = min([options.timeout] + [at for at, _ in pending])
        if now >= options.timeout:
            break
        if not socket.poll(max(1, int((limit - now) * 1000))):
            continue
        frames = socket.recv_multipart()
        position = int(frames[2]) if len(frames) == 3 else None
        print(json.dumps({"t": time.monotonic() - start, "topic": frames[0].decode("utf-8", "replace"),
                          "position": position}), flush=True)
    return 0


if __name__ == "__main__":
    exit_now(main())
