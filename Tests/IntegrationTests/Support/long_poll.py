#!/usr/bin/env python3
"""One catch-up long-poll, timed: pyzmq only (not the project's code).

  python3 long_poll.py --endpoint tcp://127.0.0.1:5555 --server-key SERVER.key.pub --key CLIENT.key
                       [--wait-ms 20000] [--prefix PREFIX]

A DEALER (CurveZMQ) on the notifier's catch-up endpoint. Asks {"after": 0, "max": 1} for the head H, then sends
{"after": H, "waitMs": N[, "prefix": P]} and prints one JSON line {"head": H, "seconds": S, "reply": REPLY}: S is the
time from sending the long-poll to its reply; {"asked": H} on standard error once the long-poll is sent. Exit status
1 when no reply comes within the wait plus 10 s.
"""
import signal

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import sys
import time

import zmq

from client_common import add_curve_arguments, client_socket_from_options, exit_now


def ask(socket, request, patience):
    socket.send_multipart([b"", json.dumps(request).encode()])
    if not socket.poll(int(patience * 1000)):
        return None
    return json.loads(socket.recv_multipart()[-1])


def main():
    parser = argparse.ArgumentParser(description="time one catch-up long-poll")
    parser.add_argument("--endpoint", required=True)
    add_curve_arguments(parser, required=True)
    parser.add_argument("--wait-ms", type=int, default=20000)
    parser.add_argument("--prefix")
    options = parser.parse_args()

    socket = client_socket_from_options(zmq.Context(), zmq.DEALER, options)
    socket.connect(options.endpoint)
    first = ask(socket, {"after": 0, "max": 1}, 10)
    if first is None or "head" not in first:
        print(json.dumps({"error": "no head", "reply": first}), flush=True)
        return 1
    request = {"after": first["head"], "waitMs": options.wait_ms}
    if options.prefix:
        request["prefix"] = options.prefix
    start = time.monotonic()
    socket.send_multipart([b"", json.dumps(request).encode()])
    print(json.dumps({"asked": first["head"]}), file=sys.stderr, flush=True)
    reply = None
    if socket.poll(int((options.wait_ms / 1000 + 10) * 1000)):
        reply = json.loads(socket.recv_multipart()[-1])
    print(json.dumps({"head": first["head"], "seconds": time.monotonic() - start, "reply": reply}), flush=True)
    return 0 if reply is not None else 1


if __name__ == "__main__":
    exit_now(main())
