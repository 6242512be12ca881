#!/usr/bin/env python3
"""A CurveZMQ gateway for the security tests, with pyzmq only (not the project's code).

  python3 curve_gateway.py --endpoint tcp://127.0.0.1:5550 --server-key SERVER.key.pub [--key CLIENT.key]
                           --app APP [--app APP ...] [--timeout S] [--batch-id ID]
  python3 curve_gateway.py --keypair DIR NAME     (writes DIR/NAME.key and DIR/NAME.key.pub with pyzmq, prints the public key)
  python3 curve_gateway.py --endpoint … --server-key … --key … --app APP --batches N --records R --user U
                           [--records-out FILE] [--pause S]   (a series: see below)

Sends one JSON batch of one location record per --app over a DEALER socket with pyzmq's curve options
(curve_serverkey, curve_publickey, curve_secretkey; the key files read with zmq.auth.load_certificate; without --key a
fresh key pair from zmq.curve_keypair(), i.e. a key nobody listed). Prints one JSON line: {"ack": {...}} when the
acknowledgement came, {"timeout": true} when none came within --timeout. Exit status 0 either way, 2 for bad usage.

With --batches N: N batches one after the other (each sent once, the next after its acknowledgement and --pause
seconds), each of --records location records of device (first --app, --user) with seq 0, 1, 2, … across the series.
Prints one JSON line per batch as gateway.py does ({"batch", "first", "count", "ack"} or {"batch", …, "timeout": true},
"first" indexing --records-out, the NDJSON of every record of the series, for journal_check.py), then
{"done": true, "accepted": A, "rateRefused": R}.
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

from client_common import client_socket_from_options


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
    parser.add_argument("--batches", type=int)
    parser.add_argument("--records", type=int, default=1)
    parser.add_argument("--user", default="curve-user")
    parser.add_argument("--records-out")
    parser.add_argument("--pause", type=float, default=0.0)
    options = parser.parse_args()

    context = zmq.Context()
    socket = client_socket_from_options(context, zmq.DEALER, options)
    socket.connect(options.endpoint)

    if options.batches:
        series(socket, options)
        socket.close(0)
        context.term()
        return 0

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


def series(socket, options):
    t = int(time.time()) - 600
    records = [{"kind": "location", "app": options.app[0], "user": options.user, "seq": seq, "t": t + seq * 0.001,
                "lat": -33.9249, "lon": 18.4241, "speed": 1.5, "course": 90, "hacc": 5}
               for seq in range(options.batches * options.records)]
    if options.records_out:
        with open(options.records_out, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record) + "\n")
    accepted = 0
    rate_refused = 0
    for number in range(options.batches):
        first = number * options.records
        batch_id = "%s-%d" % (options.batch_id, number)
        body = json.dumps(records[first:first + options.records]).encode()
        socket.send_multipart([batch_id.encode(), b"application/json", body])
        line = {"batch": batch_id, "first": first, "count": options.records}
        if socket.poll(int(options.timeout * 1000)):
            frames = socket.recv_multipart()
            ack = json.loads(frames[-1])
            line["ack"] = ack
            accepted += ack.get("accepted", 0)
            if any(rejection.get("field") == "rate" for rejection in ack.get("rejected", [])):
                rate_refused += 1
        else:
            line["timeout"] = True
        print(json.dumps(line), flush=True)
        if options.pause:
            time.sleep(options.pause)
    print(json.dumps({"done": True, "accepted": accepted, "rateRefused": rate_refused}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
