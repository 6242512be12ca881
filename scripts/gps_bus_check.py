#!/usr/bin/env python3
"""How a bus moves, from GPS positions alone: can a sign tell Go!Track's buses from its cars on the same phones?

Go!Track's app sampled car rides about every 6 s and bus rides about every 11 s, on the same phones (the rider chose
the mode before recording), so any feature that depends on the fix rate (accelerations, turns per kilometre, stops
seen between fixes) tells the dataset's labels apart without telling a bus from a car. Every ride is therefore first
thinned to one fix every --interval seconds (default 12, the bus rides' own rate), and only then measured: the speed
percentiles between fixes, the mean moving speed, the share of slow intervals, stops per kilometre (a run of slow
intervals between two moving ones) and short stops (<= 4 intervals) per kilometre.

For each feature it prints the distribution for cars and buses (rides of >= 5 minutes and >= 20 fixes, as
`make quality`'s Go!Track target) and the best a threshold on it can do *in sample* at the 2 % car limit a sign must
keep (docs/detection.md "Passengers"): the buses flagged while at most 2 % of the cars are. In-sample is the most
such a sign could reach; held out it does worse.

  scripts/gps_bus_check.py --roadsave .build/release/roadsave [--data ../shared/data] [--interval 12]

GPS Trajectories (Go!Track), UCI Machine Learning Repository, CC BY 4.0.
"""
import argparse
import collections
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

CAR_LIMIT = 0.02
MINUTES, FIXES = 5, 20
SLOW, MOVING = 1.0, 3.0  # m/s between thinned fixes: standing (a stop), and on the move


def metres(a, b):
    radius = 6371008.8
    lat1, lon1, lat2, lon2 = map(math.radians, (a[1], a[2], b[1], b[2]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * radius * math.asin(math.sqrt(h))


def thinned(fixes, interval):
    kept = []
    for fix in fixes:
        if not kept or fix[0] - kept[-1][0] >= interval:
            kept.append(fix)
    return kept


def features(fixes, interval):
    """The ride's features on its fixes thinned to `interval`; None for a ride too short to say anything."""
    fixes = thinned(fixes, interval)
    speeds = [metres(a, b) / (b[0] - a[0]) if b[0] - a[0] <= 3 * interval else None for a, b in zip(fixes, fixes[1:])]
    known = sorted(v for v in speeds if v is not None)
    distance = sum(metres(a, b) for a, b in zip(fixes, fixes[1:]))
    if len(known) < 10 or distance < 1000:
        return None
    stops = []
    i = 0
    while i < len(speeds):
        if speeds[i] is not None and speeds[i] < SLOW:
            j = i
            while j < len(speeds) and speeds[j] is not None and speeds[j] < SLOW:
                j += 1
            if i > 0 and j < len(speeds) and (speeds[i - 1] or 0) >= MOVING and (speeds[j] or 0) >= MOVING:
                stops.append(j - i)
            i = j
        else:
            i += 1
    moving = [v for v in known if v >= MOVING]
    km = distance / 1000
    return {
        "speed p85": known[int(0.85 * (len(known) - 1))],
        "speed p95": known[int(0.95 * (len(known) - 1))],
        "mean moving speed": statistics.mean(moving) if moving else 0.0,
        "share slow": sum(v < SLOW for v in known) / len(known),
        "stops per km": len(stops) / km,
        "short stops per km": sum(n <= 4 for n in stops) / km,
    }


# For each feature, which side says "bus": below the threshold (slower) or above (more stops).
BUS_SIDE = {"speed p85": "below", "speed p95": "below", "mean moving speed": "below", "share slow": "above",
            "stops per km": "above", "short stops per km": "above"}


def best_threshold(cars, buses, side):
    """The threshold flagging the most buses while at most CAR_LIMIT of the cars: (threshold, buses, cars)."""
    allowed = int(CAR_LIMIT * len(cars))
    ordered = sorted(cars) if side == "below" else sorted(cars, reverse=True)
    threshold = ordered[allowed]
    flag = (lambda v: v < threshold) if side == "below" else (lambda v: v > threshold)
    return threshold, sum(flag(v) for v in buses), sum(flag(v) for v in cars)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roadsave", required=True, help="the roadsave executable (for `convert gotrack`)")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    parser.add_argument("--interval", type=float, default=12.0, help="seconds between the fixes kept")
    options = parser.parse_args()
    folder = os.path.join(options.data, "gotrack-aracaju")
    if not os.path.isdir(folder):
        print(f"gps_bus_check: {folder} is absent: nothing to check", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as work:
        records, legs = os.path.join(work, "gotrack.ndjson"), os.path.join(work, "legs.csv")
        subprocess.run([options.roadsave, "convert", "gotrack", folder, "--output", records, "--legs", legs,
                        "--no-progress"], check=True, stderr=subprocess.DEVNULL)
        fixes = collections.defaultdict(list)
        with open(records) as f:
            for line in f:
                record = json.loads(line)
                if record["kind"] == "location":
                    fixes[record["user"]].append((record["t"], record["lat"], record["lon"]))
        rides = []
        for leg in csv.DictReader(open(legs)):
            start, end = float(leg["start_ts"]), float(leg["end_ts"])
            if leg["status"] != "kept" or end - start < 60 * MINUTES or int(leg["fixes"]) < FIXES:
                continue
            measured = features([f for f in fixes[leg["user"]] if start <= f[0] <= end], options.interval)
            if measured:
                rides.append((leg["mode"], leg["user"], measured))
    cars = [m for mode, _, m in rides if mode == "car"]
    buses = [m for mode, _, m in rides if mode == "bus"]
    print(f"Go!Track rides >= {MINUTES} min and >= {FIXES} fixes, thinned to one fix every {options.interval:.0f} s: "
          f"{len(cars)} cars, {len(buses)} buses (rides of under 1 km or 10 intervals left out)")
    print(f"{'feature':<20}{'cars p25/p50/p75':>22}{'buses p25/p50/p75':>22}   best threshold at <= {CAR_LIMIT:.0%} cars")
    for name, side in BUS_SIDE.items():
        def quartiles(values):
            values = sorted(values)
            return "/".join(f"{values[int(q * (len(values) - 1))]:.2f}" for q in (0.25, 0.5, 0.75))
        car_values, bus_values = [c[name] for c in cars], [b[name] for b in buses]
        threshold, flagged, wrong = best_threshold(car_values, bus_values, side)
        print(f"{name:<20}{quartiles(car_values):>22}{quartiles(bus_values):>22}   bus when {side} {threshold:.2f}: "
              f"{flagged}/{len(buses)} buses, {wrong}/{len(cars)} cars")
    return 0


if __name__ == "__main__":
    sys.exit(main())
