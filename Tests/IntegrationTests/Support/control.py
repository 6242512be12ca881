#!/usr/bin/env python3
"""A control client for the integration tests: pyzmq only (not the project's code).

  python3 control.py --endpoint tcp://127.0.0.1:5552 REQUEST_JSON [REQUEST_JSON ...] [--timeout S]
                    [--server-key SERVER.key.pub [--key CLIENT.key]]

Sends each request (one JSON frame, PROTOCOL §7: {"command", "app", "user", ...}) over a REQ socket, in order,
and prints each reply as one JSON line. Exit status 0 when every request was answered, 1 on a timeout (then
{"timeout": true} is printed), 2 for bad usage. With --server-key the socket is a CurveZMQ client (pyzmq's curve
options; the key files read with zmq.auth.load_certificate; without --key a fresh key pair nobody listed).
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import sys

import zmq

from client_common import add_curve_arguments, client_socket_from_options


def main():
    parser = argparse.ArgumentParser(description="send control commands to detection")
    parser.add_argument("requests", nargs="+")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--timeout", type=float, default=10.0)
    add_curve_arguments(parser)
    options = parser.parse_args()

    context = zmq.Context()
    socket = client_socket_from_options(context, zmq.REQ, options)
    socket.connect(options.endpoint)
    code = 0
    for text in options.requests:
        json.loads(text)  # refuse what is not JSON before sending it
        socket.send(text.encode())
        if not socket.poll(int(options.timeout * 1000)):
            print(json.dumps({"timeout": True}), flush=True)
            code = 1
            break
        reply = socket.recv()
        try:
            print(json.dumps(json.loads(reply)), flush=True)
        except ValueError:
            print(json.dumps({"unparsable": reply.decode("utf-8", "replace")}), flush=True)
    socket.close(0)
    context.term()
    return code


if __name__ == "__main__":
    sys.exit(main())
