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
import os
import sys

import msgpack
import zmq
import zmq.auth


def main():
    parser = argparse.ArgumentParser(description="read a RoadSave feed, plaintext or over CurveZMQ")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--server-key", help="the feed server's public certificate file")
    parser.add_argument("--key", help="this client's secret certificate file (default: a fresh, unlisted key pair)")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--consumer", default="feed_client.py")
    options = parser.parse_args()

    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    if options.server_key:
        socket.curve_serverkey = zmq.auth.load_certificate(options.server_key)[0]
        public, secret = zmq.auth.load_certificate(options.key) if options.key else zmq.curve_keypair()
        socket.curve_publickey = public
        socket.curve_secretkey = secret
    socket.connect(options.endpoint)

    def fetch(request_id, feed):
        request = {"id": request_id, "after": 0, "max": 1000, "maxBytes": 1 << 20, "ack": 0,
                   "consumer": options.consumer, "wait": 0}
        if feed is not None:
            request["feed"] = feed
        socket.send_multipart([b"fetch", msgpack.packb(request, use_bin_type=True)])
        if not socket.poll(int(options.timeout * 1000)):
            print(json.dumps({"timeout": True}), flush=True)
            return None
        frames = socket.recv_multipart()
        header = msgpack.unpackb(frames[1], raw=False)
        print(json.dumps({"reply": header, "items": len(frames) - 2}), flush=True)
        return header

    first = fetch(1, None)
    if first is not None:
        fetch(2, first["feed"])


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
    sys.stdout.flush()
    os._exit(0)
