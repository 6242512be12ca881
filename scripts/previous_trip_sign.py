#!/usr/bin/env python3
"""What a boarding sign "the ride begins far from where the device's last driving trip ended" would change, without
the engine: replays the recordings `scripts/quality.py --keep DIR` left in DIR, judges a driving trip (car or
unknown) transit when its start lies at least `--distance` metres from the end of the device's previous driving trip
(a driver walks back to where the car stood; a passenger boards elsewhere), and scores the MobilityNet legs as
`make quality` does, before and after, and counts the driving trips it would flag in the other datasets.

  scripts/quality.py --roadsave .build/debug/roadsave --keep /tmp/quality-kept
  scripts/previous_trip_sign.py --kept /tmp/quality-kept [--distance 600] [--roadsave .build/debug/roadsave]

A trip's start is its `startLatitude`/`startLongitude` (the lead-in's first fix), its end its `endLatitude`/
`endLongitude`; the first trip of a device has no previous one and is never flagged.
"""
import argparse
import collections
import csv
import glob
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quality  # noqa: E402


def distance(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * 6_371_000.0 * math.asin(min(1.0, math.sqrt(a)))


def trips_by_user(roadsave, path):
    out = subprocess.run([roadsave, "replay", path, "--quiet"], check=True, capture_output=True, text=True).stdout
    trips = collections.defaultdict(list)
    for line in out.splitlines():
        event = json.loads(line)
        if event.get("event") == "tripDidEnd":
            trips[event["user"]].append(event)
    return trips


def judged(trips, threshold):
    """Per user: (start, end, mode, reason, signs) as quality.match reads them, with the sign applied, and how many
    driving trips it flagged."""
    result, flagged = collections.defaultdict(list), 0
    for user, events in trips.items():
        car_at = None
        for event in sorted(events, key=lambda e: e["startDate"]):
            mode = event.get("transportMode", "unknown")
            if threshold is not None and mode in ("car", "unknown") and car_at and event.get("startLatitude") is not None:
                if distance(*car_at, event["startLatitude"], event["startLongitude"]) >= threshold:
                    mode = "bus"
                    flagged += 1
            if mode in ("car", "unknown") and event.get("endLatitude") is not None:
                car_at = (event["endLatitude"], event["endLongitude"])
            result[user].append((quality.iso(event["startDate"]), quality.iso(event["endDate"]), mode, "", ()))
    return result, flagged


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kept", required=True, help="the folder of scripts/quality.py --keep")
    parser.add_argument("--distance", type=float, default=600.0)
    parser.add_argument("--roadsave", default=".build/debug/roadsave")
    args = parser.parse_args()
    records = os.path.join(args.kept, "mobilitynet.ndjson")
    legs_file = os.path.join(args.kept, "mobilitynet-legs.csv")
    if not os.path.exists(records) or not os.path.exists(legs_file):
        print(f"previous_trip_sign: no MobilityNet recordings in {args.kept} (run scripts/quality.py --keep)",
              file=sys.stderr)
        return 2
    trips = trips_by_user(args.roadsave, records)
    fixes = quality.fix_times(records)
    legs = list(csv.DictReader(open(legs_file)))
    print(f"MobilityNet, a driving trip beginning >= {args.distance:g} m from the previous one's end judged transit")
    print(f"{'phones':<34}{'kind':<9}{'before':>10}{'after':>10}")
    tables = {}
    for threshold in (None, args.distance):
        by_user, _ = judged(trips, threshold)
        counts = collections.defaultdict(lambda: [0, 0])
        for leg in legs:
            mode = quality.MOBILITYNET_MODES.get(leg["mode"])
            if mode not in ("car",) and mode not in quality.TRANSIT:
                continue
            start, end = float(leg["start_ts"]), float(leg["end_ts"])
            if mode == "car" and sum(start <= t <= end for t in fixes[leg["user"]]) < quality.MOBILITYNET_CAR_FIXES:
                continue
            key = (quality.mobilitynet_group(leg["os"], leg["config"]), "car" if mode == "car" else "transit")
            counts[key][0] += 1
            counts[key][1] += quality.match(by_user[leg["user"]], start, end)[0]
        tables[threshold] = counts
    for key in sorted(tables[None]):
        (legs_n, before), (_, after) = tables[None][key], tables[args.distance][key]
        print(f"{key[0]:<34}{key[1]:<9}{f'{before}/{legs_n}':>10}{f'{after}/{legs_n}':>10}")
    for name, pattern in (("enviroCar", "envirocar-*.ndjson"), ("CBS", "cbs-*.ndjson"), ("TMD", "tmd-*.ndjson")):
        total = flagged = 0
        for path in sorted(glob.glob(os.path.join(args.kept, pattern))):
            trips_here = trips_by_user(args.roadsave, path)
            flagged += judged(trips_here, args.distance)[1]
            total += sum(1 for events in trips_here.values() for e in events
                         if e.get("transportMode", "unknown") in ("car", "unknown"))
        print(f"{name}: {flagged} of {total} driving trips flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
