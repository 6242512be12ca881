#!/usr/bin/env python3
"""An alerting system's subscriber for the integration tests: pyzmq only (not the project's code).

  python3 subscriber.py --endpoint tcp://127.0.0.1:5554 [--topic PREFIX ...] [--count N] [--timeout S]
                        [--server-key SERVER.key.pub [--key CLIENT.key]]

Connects a SUB socket to the notifier, subscribes to each --topic prefix (default: everything) and prints every
message [topic, body] or [topic, body, position] as one JSON line [topic, body] (the body parsed as JSON; a body that
is not JSON is printed as a string); with --positions, [topic, body, position] (position null when the message had
none). A message of any other shape is printed with its frame count appended. Stops after --count messages (exit 0) or when --timeout seconds have passed (exit 0 without --count,
1 when fewer than --count arrived). When the connection to the notifier is made (ZeroMQ handshake done), prints
{"connected": ENDPOINT} on standard error. With --server-key the SUB socket is a CurveZMQ client (pyzmq's curve
options; without --key a fresh key pair nobody listed).
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import time

import zmq

from client_common import add_curve_arguments, client_socket_from_options, exit_now, report_handshakes


def main():
    parser = argparse.ArgumentParser(description="print the notifier's events")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--topic", action="append", default=[])
    parser.add_argument("--count", type=int)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--positions", action="store_true", help="print each event's position (third frame)")
    add_curve_arguments(parser)
    options = parser.parse_args()

    socket = client_socket_from_options(zmq.Context(), zmq.SUB, options)
    for topic in options.topic or [""]:
        socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
    report_handshakes(socket)
    socket.connect(options.endpoint)

    received = 0
    deadline = time.monotonic() + options.timeout
    while options.count is None or received < options.count:
        left = deadline - time.monotonic()
        if left <= 0 or not socket.poll(int(left * 1000)):
            break
        frames = socket.recv_multipart()
        topic = frames[0].decode("utf-8", "replace")
        body = frames[1] if len(frames) > 1 else b""
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        position = None
        if len(frames) == 3:
            try:
                position = int(frames[2].decode("ascii"))
            except ValueError:
                position = None
        if len(frames) == 2 or position is not None:
            print(json.dumps([topic, parsed] + ([position] if options.positions else [])), flush=True)
        else:
            print(json.dumps([topic, parsed, len(frames)]), flush=True)
        received += 1
    return 0 if options.count is None or received >= options.count else 1


if __name__ == "__main__":
    exit_now(main())
