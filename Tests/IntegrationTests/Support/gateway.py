#!/usr/bin/env python3
"""A device gateway for the integration tests, written with pyzmq and msgpack only (not the project's code).

  python3 gateway.py --endpoint tcp://127.0.0.1:5550 FILE.ndjson [--batch-size N] [--content-type msgpack|json]
                     [--timeout S] [--attempts N] [--batch-prefix TEXT] [--raw]

Reads NDJSON records (PROTOCOL §2), sends them to sensor-ingest in batches over a DEALER socket as the frames
[batchID, contentType, body] (PROTOCOL §7), waits for each batch's acknowledgement [batchID, ack] and prints one
JSON line per batch: {"batch": ID, "first": index of its first record in the file, "count": N, "attempts": K,
"ack": {...}}. A batch whose acknowledgement does not come within --timeout is sent again with the same batchID
(a gateway keeps records until their batch is acknowledged). A line that is not JSON is sent as it is (a string
in the batch), so that sensor-ingest's answer to it can be checked. With --raw the file's bytes are sent, unread,
as the body of one batch (to see how a batch that cannot be read is answered). Exit status: 0 when every batch was
acknowledged, 1 otherwise, 2 for bad usage.
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import sys
import time

import msgpack
import zmq


def read_records(path):
    records = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                records.append(line)
    return records


def main():
    parser = argparse.ArgumentParser(description="send NDJSON records to sensor-ingest")
    parser.add_argument("file")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--content-type", choices=["msgpack", "json"], default="msgpack")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each acknowledgement")
    parser.add_argument("--attempts", type=int, default=3, help="sends of a batch before giving up")
    parser.add_argument("--batch-prefix", default="batch")
    parser.add_argument("--raw", action="store_true", help="send the file's bytes as the body of one batch")
    options = parser.parse_args()

    if options.raw:
        with open(options.file, "rb") as handle:
            raw = handle.read()
        records = [None]
        options.batch_size = 1
    else:
        records = read_records(options.file)
    content_type = "application/" + options.content_type
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(options.endpoint)
    poller = zmq.Poller()
    poller.register(socket, zmq.POLLIN)

    failed = False
    for number, first in enumerate(range(0, len(records), max(1, options.batch_size))):
        batch = records[first:first + options.batch_size]
        batch_id = ("%s-%d" % (options.batch_prefix, number)).encode()
        if options.raw:
            body = raw
        elif options.content_type == "msgpack":
            body = msgpack.packb(batch, use_bin_type=True)
        else:
            body = json.dumps(batch, separators=(",", ":")).encode()
        ack = None
        attempts = 0
        while ack is None and attempts < options.attempts:
            attempts += 1
            socket.send_multipart([batch_id, content_type.encode(), body])
            deadline = time.monotonic() + options.timeout
            while ack is None:
                left = deadline - time.monotonic()
                if left <= 0 or not poller.poll(int(left * 1000)):
                    break
                frames = socket.recv_multipart()
                if len(frames) != 2 or frames[0] != batch_id:
                    continue  # the late answer to an earlier attempt of another batch
                if options.content_type == "msgpack":
                    ack = msgpack.unpackb(frames[1], raw=False)
                else:
                    ack = json.loads(frames[1])
        line = {"batch": batch_id.decode(), "first": first, "count": len(batch), "attempts": attempts, "ack": ack}
        print(json.dumps(line), flush=True)
        if ack is None:
            failed = True
            break
    socket.close(0)
    context.term()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
