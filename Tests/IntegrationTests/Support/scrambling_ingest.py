#!/usr/bin/env python3
"""A stand-in for sensor-ingest's gateway socket that acknowledges out of order, written with pyzmq and msgpack only.

  python3 scrambling_ingest.py --endpoint tcp://127.0.0.1:PORT [--hold N] [--late K] [--seconds S]

Stores each batch's records when its batchID first arrives (as sensor-ingest stores before it acknowledges), but
answers in scrambled order: acknowledgements are held until N batches wait, then sent newest first. The K-th batch
(1-based) is not answered at its first arrival: once the gateway sends it again, both arrivals are answered (the
first answer is then a late duplicate). Runs until S seconds pass without a batch, then prints one JSON line:
{"stored": [[user, seq], ...] in storing order, "arrivals": {batchID: count}, "answers": {batchID: count}}.
"""
import signal

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import sys
import time

import msgpack
import zmq


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--hold", type=int, default=4)
    parser.add_argument("--late", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()

    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 1000)
    router.bind(options.endpoint)
    print(json.dumps({"listening": options.endpoint}), flush=True)

    stored, arrivals, answers = [], {}, {}
    held = []  # (identity, batchID, accepted)
    late = None  # (identity, batchID, accepted) of the K-th batch's first arrival
    order = 0
    last = time.monotonic()

    json_batches = set()

    def answer(identity, batch_id, accepted):
        ack = {"accepted": accepted, "rejected": []}
        body = json.dumps(ack).encode() if batch_id in json_batches else msgpack.packb(ack)
        router.send_multipart([identity, batch_id, body])
        key = batch_id.decode()
        answers[key] = answers.get(key, 0) + 1

    while time.monotonic() - last < options.seconds:
        if not router.poll(50):
            # Nothing more coming for now: what is held goes out.
            for entry in reversed(held):
                answer(*entry)
            held.clear()
            continue
        # A fourth frame is the batch's header (the gateway's watermark): nothing to scramble in it.
        identity, batch_id, content_type, body, *header = router.recv_multipart()
        last = time.monotonic()
        key = batch_id.decode()
        if content_type == b"application/json":
            json_batches.add(batch_id)
            records = json.loads(body)
        else:
            records = msgpack.unpackb(body, raw=False)
        if header and not records:
            # A header alone (how far the gateway has come, or its end): answered at once, not counted.
            router.send_multipart([identity, batch_id, msgpack.packb({"accepted": 0, "rejected": []})
                                   if batch_id not in json_batches else b'{"accepted":0,"rejected":[]}'])
            continue
        arrivals[key] = arrivals.get(key, 0) + 1
        if arrivals[key] == 1:
            order += 1
            stored.extend([record["user"], record["seq"]] for record in records)
            if order == options.late:
                late = (identity, batch_id, len(records))
                continue
        elif late is not None and late[1] == batch_id:
            held.append((identity, batch_id, len(records)))
            held.append(late)
            late = None
            continue
        held.append((identity, batch_id, len(records)))
        if len(held) >= options.hold:
            for entry in reversed(held):
                answer(*entry)
            held.clear()
    print(json.dumps({"stored": stored, "arrivals": arrivals, "answers": answers}), flush=True)
    router.close()
    context.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
