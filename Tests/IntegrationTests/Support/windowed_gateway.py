#!/usr/bin/env python3
"""A pipelining device gateway without watermarks, written with pyzmq and msgpack only (not the project's code): the
kind of gateway the field has, for the outage test's measure of what such a gateway gets.

  python3 windowed_gateway.py --endpoint tcp://127.0.0.1:5550 FILE.ndjson [--batch-size N] [--window N]
                              [--rate RECORDS_PER_SECOND] [--timeout S]

Reads NDJSON records (PROTOCOL §2) and sends them paced at --rate in batches of three frames [batchID,
contentType, body] (no header: no watermark), keeping up to --window batches unacknowledged; a batch whose
acknowledgement does not come within --timeout is sent again with the same batchID, and meanwhile newer batches go
on (as a gateway that only resends on its own timer does). Prints one JSON line per acknowledged batch and, at the
end, {"done": true, "batches": N, "resent": K}. Exit status 0 when every batch was acknowledged, 1 otherwise.
"""
import signal

# A process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import sys
import time

import msgpack
import zmq


def main():
    parser = argparse.ArgumentParser(description="send NDJSON records to sensor-ingest, pipelined, no watermarks")
    parser.add_argument("file")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--give-up", type=float, default=120.0, help="seconds after which unacknowledged batches fail")
    options = parser.parse_args()

    with open(options.file, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    batches = [records[first:first + options.batch_size] for first in range(0, len(records), options.batch_size)]
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(options.endpoint)
    start = time.monotonic()
    in_flight = {}  # batchID -> (number, due)
    next_batch = 0
    resent = 0
    while next_batch < len(batches) or in_flight:
        now = time.monotonic()
        if now - start > options.give_up:
            print(json.dumps({"done": False, "unacknowledged": sorted(n for n, _ in in_flight.values())}), flush=True)
            return 1
        # A batch is due when its last record is, at --rate.
        if next_batch < len(batches) and len(in_flight) < options.window:
            due_at = start + (next_batch + 1) * options.batch_size / options.rate
            if now >= due_at:
                batch_id = b"py-%d" % next_batch
                socket.send_multipart([batch_id, b"application/msgpack", msgpack.packb(batches[next_batch])])
                in_flight[batch_id] = (next_batch, now + options.timeout)
                next_batch += 1
                continue
        for batch_id, (number, due) in list(in_flight.items()):
            if now >= due:
                socket.send_multipart([batch_id, b"application/msgpack", msgpack.packb(batches[number])])
                in_flight[batch_id] = (number, now + options.timeout)
                resent += 1
        if socket.poll(20):
            batch_id, reply = socket.recv_multipart()
            if batch_id in in_flight:
                number, _ = in_flight.pop(batch_id)
                print(json.dumps({"batch": number, "ack": msgpack.unpackb(reply)}), flush=True)
    print(json.dumps({"done": True, "batches": len(batches), "resent": resent}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
