#!/usr/bin/env python3
"""Writes the seed inputs in Fuzz/corpus/<target>/ (small and few: libFuzzer grows its own corpus from them).
Run again after changing it; the files are checked in so `make fuzz` needs no Python."""
import json
import os
import struct

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))

LOCATION = {"kind": "location", "app": "app-1", "user": "u1", "seq": 7, "t": 1718708242.5,
            "lat": 52.52, "lon": 13.405, "speed": 13.9, "course": 90.5, "hacc": 5.0}
ACTIVITY = {"kind": "activity", "app": "app-1", "user": "u1", "t": 1718708243.0,
            "activity": "automotive", "confidence": "high"}
STEPS = {"kind": "steps", "app": "a", "user": "u2", "t": 1718708244.0, "steps": 1200}
IMPACT = {"kind": "impact", "app": "app-1", "user": "u1", "t": 1718708245.25, "peakG": 6.5, "durationMs": 40.0,
          "samples": [[-0.01, 0.1, 0.2, 0.98], [0.0, 4.5, 2.0, 3.1]]}
CAPABILITIES = {"kind": "capabilities", "app": "a", "user": "u3", "t": 1718708246.0,
                "activityAvailable": True, "pedometerAvailable": False}
RECORDS = [LOCATION, ACTIVITY, STEPS, IMPACT, CAPABILITIES]
ACK = {"accepted": 2, "rejected": [{"index": 1, "field": "lat", "reason": "95 is outside -90…90"}]}


def js(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def mp(value):
    return msgpack.packb(value, use_bin_type=True)


def frames(*parts):
    return b"".join(struct.pack("<H", len(p)) + p for p in parts)


SEEDS = {
    "msgpack_value": {
        "batch": mp([LOCATION, IMPACT]), "scalars": mp([None, True, -1, 2**40, 1.5, "é", {"k": []}]),
        "ack": mp(ACK), "float32": b"\x92\xca\x3f\xc0\x00\x00\xd0\x80",
    },
    # first byte: even JSON, odd MessagePack
    "record_batch": {
        "json": b"\x00" + js(RECORDS), "msgpack": b"\x01" + mp(RECORDS),
        "bad-json": b"\x00" + js([dict(LOCATION, lat=95), 3]), "bad-msgpack": b"\x01" + mp([dict(STEPS, steps=-1), "x"]),
    },
    "json_value": {
        "record": js(LOCATION), "mixed": b'[null,true,false,-0.0,1e-7,1E+300,"\\u00e9\\ud83d\\ude00\\n",{"a":{}}]',
        "spaces": b' { "a" : [ 1 , 2 ] } ',
    },
    # plus the two values that `json()` once wrote as the bound the decoder refuses (ModelTests' fuzz regressions)
    "record_json": dict({kind["kind"]: js(kind) for kind in RECORDS},
                        **{"edge-t": js(dict(IMPACT, t=4102444799.9996)), "edge-peak": js(dict(IMPACT, peakG=999.99996))}),
    "acknowledgement": {"json": b"\x00" + js(ACK), "msgpack": b"\x01" + mp(ACK),
                        "unreadable": b"\x00" + js({"accepted": 0, "rejected": [{"index": -1, "field": "(batch)", "reason": "x"}]}),
                        "rate": b"\x01" + mp({"accepted": 0, "rejected": [{"index": -1, "field": "rate", "reason": "slow"}],
                                               "retryAfterMs": 250})},
    "control_request": {
        "configure": js({"command": "configure", "app": "app-1", "detectionMode": "all", "shouldAutoDetectTrips": True}),
        "mode": js({"command": "setDetectionMode", "app": "app-1", "user": "u1", "mode": "crashOnly"}),
        "auto": js({"command": "setAutoTripDetection", "app": "a", "user": None, "enabled": False}),
        "test-crash": js({"command": "raiseTestCrash", "app": "a", "user": "u"}),
        "test-crash-follow-up": js({"command": "raiseTestCrash", "app": "a", "followUp": True}),
    },
    "detection_settings": {
        "some": js({"tripDetectionEnabled": False, "startSpeed": 5, "stepThreshold": 30, "offlineGrace": 3600.5}),
        "empty": b"{}",
    },
    # first byte: even a feed request, odd a reply header
    "feed_messages": {
        "request": b"\x00" + mp({"id": 1, "after": 10, "max": 256, "maxBytes": 4194304, "ack": 5, "consumer": "detection 0/2",
                                 "wait": 1000, "feed": "f-1", "through": 20, "shard": 0, "shards": 2}),
        "request-min": b"\x00" + mp({"id": 0, "after": 0, "max": 1}),
        "header": b"\x01" + mp({"id": 1, "feed": "f-1", "after": 10, "to": 12, "head": 99}),
        "header-error": b"\x01" + mp({"id": 2, "feed": "f-2", "after": 0, "to": 0, "head": 0, "error": "another feed"}),
        "request-pack": b"\x00" + mp({"id": 3, "after": 1, "max": 256, "pack": True}),
        "header-packed": b"\x01" + mp({"id": 3, "feed": "f-1", "after": 1, "to": 3, "head": 9, "packed": True}),
        "packed-items": b"\x03" + b"\xdd\x00\x00\x00\x02" + b"\xc4\x01\x90" + b"\xc4\x00",
    },
    "event_body": {
        "start": mp({"event": "tripDidStart", "app": "a", "user": "u", "tripID": "t-1", "startDate": 1718708242.5}),
        "end": mp({"event": "tripDidEnd", "app": "a", "user": "u", "tripID": "t-1", "startDate": 1718708242.5,
                   "endDate": 1718709000.0, "distanceMetres": 5230.5, "endReason": "stopDelay"}),
        "crash": mp({"event": "crashDetected", "app": "a", "user": "u", "crashID": "c-1", "confidence": "high",
                     "detectedAt": 1718708300.0, "latitude": None, "longitude": 13.4, "isTest": False}),
        "crash-details": mp({"event": "crashDetected", "app": "a", "user": "u", "crashID": "c-2", "confidence": "unknown",
                             "detectedAt": 1718708300.0, "latitude": 52.5, "longitude": 13.4, "isTest": False,
                             "peakG": 45.0, "impacts": 2, "positionTrusted": True, "inTrip": True, "tripID": "t-1",
                             "recentPositions": [[52.49, 13.39, 1718708299.0], [52.48, 13.38, 1718708298.0]],
                             "speedBeforeImpact": 15.0, "deltaV": 24.5, "heading": 271.5, "positionAge": 0.4}),
        "follow-up": mp({"event": "crashFollowUp", "app": "a", "user": "u", "crashID": "c-2", "confidence": "high",
                         "detectedAt": 1718708300.0, "observedUntil": 1718708440.0, "outcome": "personWalking",
                         "isTest": False, "records": 212, "secondsOfData": 139.5, "steps": 220,
                         "distanceMoved": 151.5, "latitude": 52.5, "longitude": 13.4}),
    },
    "catch_up_request": {
        "after": js({"after": 10, "max": 100, "prefix": "crashDetected.app-1."}),
        "event": js({"afterEventID": "e-1"}),
        "long-poll": js({"after": 10, "waitMs": 25000, "prefix": "tripDidStart."}),
    },
    "gateway_batch": {
        "router-json": frames(b"id-1", b"", b"batch-1", b"application/json", js(RECORDS[:3])),
        "router-msgpack": frames(b"id-2", b"batch-2", b"application/x-msgpack; charset=x", mp([IMPACT, dict(STEPS, app="other")])),
        "bad-type": frames(b"id-3", b"batch-3", b"text/plain", b"[]"),
        "header": frames(b"id-4", b"batch-4", b"application/msgpack", mp(RECORDS[:2]),
                         mp({"gateway": "gw-1", "watermark": 1718708240.5})),
        "header-end": frames(b"id-5", b"", b"batch-5", b"application/json", js([]), js({"gateway": "gw-1", "end": True})),
    },
    # a records array, or the map ingest writes for a batch with a header (records last)
    "journal_chunk": {
        "records": mp(RECORDS[:2]),
        "header": b"\x84" + mp("gateway") + mp("gw-1") + mp("watermark") + mp(1718708240.5) + mp("shard") + mp(3)
                  + mp("records") + mp(RECORDS[:2]),
        "end": b"\x84" + mp("gateway") + mp("gw-1") + mp("end") + mp(True) + mp("shard") + mp(0) + mp("records") + mp([]),
    },
}


def main():
    for target, seeds in SEEDS.items():
        directory = os.path.join(HERE, "corpus", target)
        os.makedirs(directory, exist_ok=True)
        for old in os.listdir(directory):
            os.remove(os.path.join(directory, old))
        for name, data in seeds.items():
            with open(os.path.join(directory, name), "wb") as handle:
                handle.write(data)


if __name__ == "__main__":
    main()
