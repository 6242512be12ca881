#!/usr/bin/env python3
"""A feed consumer for the security tests: pyzmq and msgpack only (not the project's code).

  python3 feed_client.py --endpoint tcp://127.0.0.1:5551 [--server-key SERVER.key.pub [--key CLIENT.key]]
                         [--timeout S] [--consumer NAME]

Speaks the pull feed of Shared/Wire/FeedMessages.swift (ingest's journal, detection's outbox) on a DEALER socket:
first a request without a feed (the reply names the feed), then one for everything after position 0. Prints one JSON
line per reply, {"reply": {header}, "items": N}, and {"timeout": true} when a reply does not come within --timeout
seconds (then exits). With --server-key the DEALER is a CurveZMQ client (pyzmq's curve options); without --key it
uses a fresh key pair nobody listed. Exit status 0 either way, 2 for bad usage.
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json

import zmq

from client_common import FETCH, add_curve_arguments, client_socket_from_options, pack, run_until_interrupted, unpack


def main():
    parser = argparse.ArgumentParser(description="read a RoadSave feed, plaintext or over CurveZMQ")
    parser.add_argument("--endpoint", required=True)
    add_curve_arguments(parser)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--consumer", default="feed_client.py")
    options = parser.parse_args()

    socket = client_socket_from_options(zmq.Context(), zmq.DEALER, options)
    socket.connect(options.endpoint)

    def fetch(request_id, feed):
        request = {"id": request_id, "after": 0, "max": 1000, "maxBytes": 1 << 20, "ack": 0,
                   "consumer": options.consumer, "wait": 0}
        if feed is not None:
            request["feed"] = feed
        socket.send_multipart([FETCH, pack(request)])
        if not socket.poll(int(options.timeout * 1000)):
            print(json.dumps({"timeout": True}), flush=True)
            return None
        frames = socket.recv_multipart()
        header = unpack(frames[1])
        print(json.dumps({"reply": header, "items": len(frames) - 2}), flush=True)
        return header

    first = fetch(1, None)
    if first is not None:
        fetch(2, first["feed"])


if __name__ == "__main__":
    run_until_interrupted(main)
