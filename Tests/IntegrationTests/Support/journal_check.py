#!/usr/bin/env python3
"""Checks sensor-ingest's journal against what a gateway was told, with Python's sqlite3 and msgpack only (not the
project's code).

  python3 journal_check.py --journal DATA_DIR/journal.sqlite --records FILE.ndjson --acks GATEWAY_OUTPUT

FILE.ndjson is what gateway.py sent; GATEWAY_OUTPUT holds gateway.py's JSON lines ({"batch", "first", "count", "ack"}).
Opening the journal replays (or rolls back) what a killed writer left in its write-ahead log, as any reader would.
Prints one JSON object: {"integrity": "ok" or SQLite's complaints, "chunks", "records" (stored), "acknowledged"
(records of batches the gateway had acknowledged with every record accepted), "missing" (acknowledged records not in
the journal, up to 20 of them, as "user#seq"), "missingCount", "duplicates" (records stored more than once: a batch
committed whose acknowledgement was lost with the process, sent again), "positionsIncreasing", "shardsMatch" (every
record's chunk is on its device's shard), "meta"}. Exit status 0 when nothing acknowledged is missing and the file is
sound, 1 otherwise.
"""
import signal

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import collections
import json
import sqlite3
import sys

import msgpack


def fnv1a64(data):
    value = 0xcbf29ce484222325
    for byte in data:
        value ^= byte
        value = (value * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return value


def main():
    parser = argparse.ArgumentParser(description="check an ingest journal against a gateway's acknowledgements")
    parser.add_argument("--journal", required=True)
    parser.add_argument("--records", required=True)
    parser.add_argument("--acks", required=True)
    options = parser.parse_args()

    with open(options.records, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    acknowledged = set()
    with open(options.acks, encoding="utf-8") as handle:
        for line in handle:
            try:
                batch = json.loads(line)
            except ValueError:
                continue
            ack = batch.get("ack")
            if not isinstance(ack, dict) or ack.get("accepted") != batch["count"]:
                continue
            for record in records[batch["first"]:batch["first"] + batch["count"]]:
                acknowledged.add("%s#%s" % (record["user"], record["seq"]))

    connection = sqlite3.connect(options.journal)
    integrity = [row[0] for row in connection.execute("PRAGMA integrity_check")]
    meta = dict(connection.execute("SELECT key, value FROM meta"))
    shards = int(meta.get("shards", "0"))
    stored = collections.Counter()
    previous = 0
    increasing = True
    shards_match = True
    chunks = 0
    for position, shard, count, body in connection.execute(
            "SELECT position, shard, records, body FROM chunks ORDER BY position"):
        chunks += 1
        increasing = increasing and position > previous
        previous = position
        items = msgpack.unpackb(body, raw=False)
        if len(items) != count:
            shards_match = False
        for record in items:
            stored["%s#%s" % (record["user"], record["seq"])] += 1
            # The sharding rule (DeviceShard.of in Shared/Wire/DeviceShard.swift): FNV-1a 64 of app, 0xFF, user; mod shards.
            key = record["app"].encode() + b"\xff" + record["user"].encode()
            if shards and fnv1a64(key) % shards != shard:
                shards_match = False
    connection.close()

    missing = sorted(key for key in acknowledged if key not in stored)
    result = {
        "integrity": "ok" if integrity == ["ok"] else integrity,
        "chunks": chunks,
        "records": sum(stored.values()),
        "acknowledged": len(acknowledged),
        "missing": missing[:20],
        "missingCount": len(missing),
        "duplicates": sum(count - 1 for count in stored.values() if count > 1),
        "positionsIncreasing": increasing,
        "shardsMatch": shards_match,
        "meta": meta,
    }
    print(json.dumps(result), flush=True)
    sound = result["integrity"] == "ok" and increasing and not missing
    return 0 if sound else 1


if __name__ == "__main__":
    sys.exit(main())
