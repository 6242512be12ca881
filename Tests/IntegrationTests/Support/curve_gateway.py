#!/usr/bin/env python3
"""A CurveZMQ gateway for the security tests, with pyzmq only (not the project's code).

  python3 curve_gateway.py --endpoint tcp://127.0.0.1:5550 --server-key SERVER.key.pub [--key CLIENT.key]
                           --app APP [--app APP ...] [--timeout S] [--batch-id ID]
  python3 curve_gateway.py --keypair DIR NAME     (writes DIR/NAME.key and DIR/NAME.key.pub with pyzmq, prints the public key)

Sends one JSON batch of one location record per --app over a DEALER socket with pyzmq's curve options
(curve_serverkey, curve_publickey, curve_secretkey; the key files read with zmq.auth.load_certificate; without --key a
fresh key pair from zmq.curve_keypair(), i.e. a key nobody listed). Prints one JSON line: {"ack": {...}} when the
acknowledgement came, {"timeout": true} when none came within --timeout. Exit status 0 either way, 2 for bad usage.
"""
import signal

# A process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import os
import sys
import time

import zmq
import zmq.auth


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--keypair":
        public, secret = zmq.auth.create_certificates(sys.argv[2], sys.argv[3])
        print(zmq.auth.load_certificate(public)[0].decode(), flush=True)
        return 0
    parser = argparse.ArgumentParser(description="send one batch to sensor-ingest over CurveZMQ")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--server-key", required=True, help="the server's public certificate file")
    parser.add_argument("--key", help="this client's secret certificate file (default: a fresh, unlisted key pair)")
    parser.add_argument("--app", action="append", required=True)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--batch-id", default="curve-batch")
    options = parser.parse_args()

    server_public, _ = zmq.auth.load_certificate(options.server_key)
    if options.key:
        public, secret = zmq.auth.load_certificate(options.key)
    else:
        public, secret = zmq.curve_keypair()
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.curve_serverkey = server_public
    socket.curve_publickey = public
    socket.curve_secretkey = secret
    socket.connect(options.endpoint)

    t = int(time.time()) - 60
    records = [{"kind": "location", "app": app, "user": "curve-user-%d" % index, "seq": 0, "t": t,
                "lat": -33.9249, "lon": 18.4241, "speed": 1.5, "course": 90, "hacc": 5}
               for index, app in enumerate(options.app)]
    socket.send_multipart([options.batch_id.encode(), b"application/json", json.dumps(records).encode()])
    if socket.poll(int(options.timeout * 1000)):
        frames = socket.recv_multipart()
        print(json.dumps({"ack": json.loads(frames[-1])}), flush=True)
    else:
        print(json.dumps({"timeout": True}), flush=True)
    socket.close(0)
    context.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
