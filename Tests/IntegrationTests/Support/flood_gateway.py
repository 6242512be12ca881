#!/usr/bin/env python3
"""A gateway that sends as fast as acknowledgements allow, written with pyzmq and msgpack only (not the project's code).

  python3 flood_gateway.py --endpoint tcp://127.0.0.1:5550 [--devices N] [--seconds S] [--batch N] [--window W]
                           [--app ID] [--prefix TEXT] [--key FILE.key --server-key FILE.key.pub]

Generates records on the fly for N devices (each driving at 14 m/s along a line, one location a second of event
time, an automotive activity now and then), sends them in batches of --batch over one DEALER with up to --window
batches waiting for their acknowledgement, for --seconds seconds, then waits for the last acknowledgements. A batch
without an acknowledgement in 10 s is sent again (same batchID). Prints one JSON line per second of progress
({"progress": records acknowledged so far}) and a final one: {"sent": records sent, "acknowledged": records in
batches acknowledged as fully accepted, "refused": records in batches answered with accepted 0 (refused whole),
"rejected": records rejected one by one, "batches", "seconds", "rate"}. Every acknowledged batch's user and seq range
is written to --acks FILE (one JSON line each) for checking against the journal. With --key and --server-key (key
files of `roadsave keygen`) the DEALER is a CurveZMQ client. Exit status 0 when every batch got an answer.
"""
import signal

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import math
import sys
import time

import msgpack
import zmq
import zmq.auth


def main():
    parser = argparse.ArgumentParser(description="flood sensor-ingest with generated records")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--devices", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--app", default="demo-app")
    parser.add_argument("--prefix", default="flood")
    parser.add_argument("--acks", default=None)
    parser.add_argument("--key", default=None, help="this gateway's key file (CurveZMQ)")
    parser.add_argument("--server-key", default=None, help="sensor-ingest's public key file (CurveZMQ)")
    options = parser.parse_args()

    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    if options.key:
        public, secret = zmq.auth.load_certificate(options.key)
        server, _ = zmq.auth.load_certificate(options.server_key)
        socket.curve_publickey, socket.curve_secretkey, socket.curve_serverkey = public, secret, server
    socket.connect(options.endpoint)
    acks = open(options.acks, "w") if options.acks else None

    start_t = 1_780_000_000.0
    step = [0] * options.devices
    device = 0

    def next_batch():
        nonlocal device
        records = []
        for _ in range(options.batch):
            n = step[device]
            step[device] += 1
            user = "%s-%05d" % (options.prefix, device)
            t = start_t + n
            if n % 30 == 0:
                records.append({"kind": "activity", "app": options.app, "user": user, "seq": n, "t": t,
                                "activity": "automotive", "confidence": "high"})
            else:
                lon = 18.4 + (n * 14.0) / (111_320.0 * math.cos(math.radians(-33.9)))
                records.append({"kind": "location", "app": options.app, "user": user, "seq": n, "t": t,
                                "lat": -33.9 + device * 0.001, "lon": lon, "speed": 14.0, "hacc": 5.0})
            device = (device + 1) % options.devices
        return records

    in_flight = {}
    number = 0
    sent = acknowledged = refused = rejected = batches = 0
    began = time.monotonic()
    last_progress = began
    poller = zmq.Poller()
    poller.register(socket, zmq.POLLIN)
    while True:
        now = time.monotonic()
        sending = now - began < options.seconds
        while sending and len(in_flight) < options.window:
            records = next_batch()
            batch_id = ("%s-%d" % (options.prefix, number)).encode()
            number += 1
            body = msgpack.packb(records, use_bin_type=True)
            in_flight[batch_id] = (records, body, now)
            socket.send_multipart([batch_id, b"application/msgpack", body])
            sent += len(records)
        if not in_flight and not sending:
            break
        for batch_id, (records, body, sent_at) in list(in_flight.items()):
            if now - sent_at > 10:
                socket.send_multipart([batch_id, b"application/msgpack", body])
                in_flight[batch_id] = (records, body, now)
        if dict(poller.poll(100)).get(socket):
            while True:
                try:
                    frames = socket.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                if len(frames) != 2 or frames[0] not in in_flight:
                    continue
                records, _, _ = in_flight.pop(frames[0])
                ack = msgpack.unpackb(frames[1], raw=False)
                batches += 1
                if ack.get("accepted") == len(records):
                    acknowledged += len(records)
                    if acks:
                        acks.write(json.dumps({"first": [records[0]["user"], records[0]["seq"]],
                                               "count": len(records)}) + "\n")
                elif ack.get("accepted", 0) == 0:
                    refused += len(records)
                else:
                    rejected += len(ack.get("rejected", []))
        if now - last_progress >= 1:
            last_progress = now
            print(json.dumps({"progress": acknowledged}), flush=True)
    seconds = time.monotonic() - began
    if acks:
        acks.close()
    print(json.dumps({"sent": sent, "acknowledged": acknowledged, "refused": refused, "rejected": rejected,
                      "batches": batches, "seconds": round(seconds, 3), "rate": round(acknowledged / seconds)}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
