#!/usr/bin/env python3
"""A minimal RoadSave gateway: records from an NDJSON file to sensor-ingest, as docs/gateways.md describes.

  python3 gateway.py RECORDS.ndjson [--endpoint tcp://127.0.0.1:5550] [--gateway NAME]
                     [--key GATEWAY.key --server-key INGEST.key.pub] [--batch 500] [--max-disorder 10]
                     [--timeout 10] [--attempts 5]

Reads sensor records (docs/PROTOCOL.md §2, one JSON object a line, in time order up to --max-disorder seconds),
gives each device's records consecutive `seq` numbers when they carry none, and sends them in batches: MessagePack
frames [batchID, contentType, body, header]. One batch is on its way at a time. It is kept until its
acknowledgement comes and sent again with the same batchID (and a header computed afresh) when none comes within
--timeout, or after the acknowledgement's retryAfterMs when sensor-ingest limits the gateway's rate or could not
store it. Each header's watermark promises that no record older than it follows the batch; the last header says the stream is over.
Prints each acknowledgement as a JSON line; exits 1 when a batch is not acknowledged after --attempts sends.
Needs pyzmq and msgpack; --key and --server-key are ZeroMQ certificate files (`roadsave keygen`).
"""
import argparse
import json
import os
import sys
import time

import msgpack
import zmq
import zmq.auth


def main():
    parser = argparse.ArgumentParser(description="A minimal RoadSave gateway.")
    parser.add_argument("records", help="NDJSON file of sensor records (- for standard input)")
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5550", help="sensor-ingest's gateway endpoint")
    parser.add_argument("--gateway", help="the stream's name in the headers (default: new for each run)")
    parser.add_argument("--key", help="this gateway's CurveZMQ secret key file (NAME.key)")
    parser.add_argument("--server-key", help="sensor-ingest's public key file (NAME.key.pub), with --key")
    parser.add_argument("--batch", type=int, default=500, help="records per batch")
    parser.add_argument("--max-disorder", type=float, default=10.0,
                        help="seconds the input may be out of time order; the watermark stays this far behind")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for an acknowledgement")
    parser.add_argument("--attempts", type=int, default=5, help="sends of one batch before giving up")
    args = parser.parse_args()
    if bool(args.key) != bool(args.server_key):
        parser.error("--key and --server-key go together")

    socket = zmq.Context().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    # A link that dies without a word (docs/operating.md, "Links") is found by ZMTP heartbeats within about 4 s and
    # made anew as soon as it carries again; the batches sent on the dead one are sent again after --timeout. The
    # services' own defaults, in milliseconds; the TTL asks ingest to wait 120 s for a batch on a slow uplink (libzmq
    # counts a connection alive only when a whole frame arrives).
    for option, value in {zmq.HEARTBEAT_IVL: 1000, zmq.HEARTBEAT_TIMEOUT: 3000, zmq.HEARTBEAT_TTL: 120000,
                          zmq.CONNECT_TIMEOUT: 2000, zmq.RECONNECT_IVL_MAX: 1000, zmq.HANDSHAKE_IVL: 3000}.items():
        socket.setsockopt(option, value)
    if args.key:  # CurveZMQ: this gateway's pair, and sensor-ingest's public key
        public, secret = zmq.auth.load_certificate(args.key)
        socket.curve_publickey, socket.curve_secretkey = public, secret
        socket.curve_serverkey = zmq.auth.load_certificate(args.server_key)[0]
    socket.connect(args.endpoint)

    # A stream name of its own for each run: a stream is one run's promises (detection keeps the highest watermark
    # it read for a name, and ignores every header of a name after its "end").
    gateway = args.gateway or "py-%d-%s" % (os.getpid(), os.urandom(3).hex())
    # seq: consecutive per device. Detection drops a repeated seq within 1,024 of the device's highest as a
    # duplicate, so a new run must not number from 0 again: its numbers start from its start time (ms × 1,000).
    first_seq = int(time.time() * 1000) * 1000
    next_seq = {}
    newest = None  # the newest t read
    promised = [0.0]  # the highest watermark sent
    sent = {"batches": 0, "accepted": 0, "rejected": 0}

    def watermark():
        # One batch at a time: besides the batch that carries the header, nothing is unacknowledged and nothing
        # read waits to be sent, so what may still come is what is still to be read: nothing older than the
        # newest time read less the input's disorder. Nothing read yet: nothing to promise, no header.
        if newest is None:
            return None
        promised[0] = max(promised[0], newest - args.max_disorder)
        return {"gateway": gateway, "watermark": promised[0]}

    def end():
        return {"gateway": gateway, "end": True}

    def send(number, records, header):
        batch_id = b"%s-%d" % (gateway.encode(), number)
        body = msgpack.packb(records)
        attempt = 1
        while True:
            frames = [batch_id, b"application/msgpack", body]
            if (promise := header()) is not None:
                frames.append(msgpack.packb(promise))
            socket.send_multipart(frames)
            deadline = time.monotonic() + args.timeout
            ack = None
            while ack is None and socket.poll(max(0, deadline - time.monotonic()) * 1000):
                reply_id, reply = socket.recv_multipart()
                if reply_id == batch_id:  # else a late answer to an earlier send: skipped
                    ack = msgpack.unpackb(reply)
            if ack is not None and "retryAfterMs" in ack:  # rate limit or store failure: no verdict, send it again
                time.sleep(ack["retryAfterMs"] / 1000)
                continue
            if ack is not None:
                return ack
            attempt += 1
            if attempt > args.attempts:
                sys.exit("batch %s not acknowledged after %d sends" % (batch_id.decode(), args.attempts))
            time.sleep(min(5.0, 0.25 * 2 ** (attempt - 2)))  # then the same batch, same batchID, again

    def deliver(number, records, header):
        ack = send(number, records, header)
        sent["batches"] += 1
        sent["accepted"] += ack["accepted"]
        sent["rejected"] += len(ack["rejected"])
        print(json.dumps({"batch": number, "records": len(records), "ack": ack}), flush=True)

    source = sys.stdin if args.records == "-" else open(args.records)
    batch, number = [], 0
    for line_number, line in enumerate(source, 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record, dict) or not isinstance(record.get("t"), (int, float)):
            batch.append(record)  # sensor-ingest rejects it in the acknowledgement, naming the field
            continue
        if record["t"] < promised[0]:
            print("line %d: t %s is behind the watermark: detection may find it too late" % (line_number, record["t"]),
                  file=sys.stderr)
        newest = record["t"] if newest is None else max(newest, record["t"])
        if "seq" not in record:
            device = (record.get("app"), record.get("user"))
            record["seq"] = next_seq.get(device, first_seq)
            next_seq[device] = record["seq"] + 1
        batch.append(record)
        if len(batch) == args.batch:
            deliver(number, batch, watermark)
            batch, number = [], number + 1
    if batch:
        deliver(number, batch, watermark)
        number += 1
    deliver(number, [], end)  # the stream is over: its devices are decided as a replay decides them at its end
    print(json.dumps(sent), file=sys.stderr)


if __name__ == "__main__":
    main()
