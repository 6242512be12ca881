#!/usr/bin/env python3
"""Which single feature could tell a passenger's ride from a driver's, judged on data it was not fitted on.

Reads the features CSV of `scripts/quality.py --features FILE` and takes the rides the engine judged driving (car or
unknown) that overlap a labelled car leg or a labelled transit leg (bus, tram, metro, train, ferry). For every feature
of `ride_features.FIELDS` and both directions, it fits a threshold on every fold but one (the loosest that flags at
most `--car-limit` of the training folds' car rides having the feature, catching the most transit rides) and scores it
on the fold left out: transit rides caught, car rides flagged. Folds are the datasets (CBS, MobilityNet, TMD,
enviroCar); `--mobilitynet-specs` splits MobilityNet by its journey specs instead (its runs of one spec are one fold),
so that MobilityNet's drivers, the only ones recorded with what follows the ride, can be held out too.

  scripts/fit_signs.py FEATURES.csv [--car-limit 0.02] [--mobilitynet-specs] [--top 12]

Prints, per feature and direction, each fold's held-out figures (caught/transit, flagged/cars, the threshold fitted
without it), sorted by the transit caught in all held-out folds together where no held-out fold flags more than the
limit of its cars. A feature missing on a ride (no fixes, nothing after it) neither catches nor flags.
"""
import argparse
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ride_features  # noqa: E402

TRANSIT = {"bus", "tram", "metro", "train", "ferry"}
# The MobilityNet legs of each spec (the leg IDs are the spec's own).
SPEC_OF_LEG = {
    "freeway_driving_weekday": "car_scooter_brex_san_jose", "suburb_city_driving_weekend": "unimodal_trip_car_bike_mtv_la",
}


def fold_of(row, by_spec, legs_spec):
    family = row["dataset"].split(" ")[0]
    if family != "MobilityNet" or not by_spec:
        return family
    leg_id = row["name"].split(" ")[-1] if row["name"] else ""
    return "MobilityNet " + legs_spec.get(leg_id, "?").split("_")[0]


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def fit(cars, transit, direction, limit):
    """The threshold that flags at most `limit` of `cars` and catches the most of `transit` (None: none flags any)."""
    flags = (lambda v, t: v >= t) if direction == ">=" else (lambda v, t: v <= t)
    candidates = sorted({v for v in transit})
    if direction == "<=":
        candidates.reverse()
    best = None
    for threshold in candidates:
        flagged = sum(flags(v, threshold) for v in cars)
        if cars and flagged > limit * len(cars):
            continue
        caught = sum(flags(v, threshold) for v in transit)
        if best is None or caught > best[1]:
            best = (threshold, caught)
    return best[0] if best else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("features")
    parser.add_argument("--car-limit", type=float, default=0.02)
    parser.add_argument("--mobilitynet-specs", action="store_true")
    parser.add_argument("--legs", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                                       "mobilitynet-whole-journeys", "legs_DERIVED.csv"),
                        help="MobilityNet's legs, to find each ride's spec (with --mobilitynet-specs)")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    legs_spec = {}
    if args.mobilitynet_specs:
        if not os.path.exists(args.legs):
            print(f"fit_signs: no MobilityNet legs at {args.legs}", file=sys.stderr)
            return 2
        legs_spec = {row["leg_id"]: row["spec"] for row in csv.DictReader(open(args.legs))}
    rides = [row for row in csv.DictReader(open(args.features))
             if row["kind"] == "ride" and row["transportMode"] in ("car", "unknown")
             and (row["label"] == "car" or row["label"] in TRANSIT)]
    folds = collections.defaultdict(lambda: {"car": [], "transit": []})
    for row in rides:
        folds[fold_of(row, args.mobilitynet_specs, legs_spec)]["car" if row["label"] == "car" else "transit"].append(row)
    names = sorted(folds)
    print("rides judged driving, by fold: " + ", ".join(
        f"{name} {len(folds[name]['car'])} car / {len(folds[name]['transit'])} transit" for name in names))
    results = []
    for feature in ride_features.FIELDS:
        for direction in (">=", "<="):
            flags = (lambda v, t: v >= t) if direction == ">=" else (lambda v, t: v <= t)
            cells, caught_all, ok = [], 0, True
            for held in names:
                train_cars = [number(r[feature]) for n in names if n != held for r in folds[n]["car"]]
                train_transit = [number(r[feature]) for n in names if n != held for r in folds[n]["transit"]]
                threshold = fit([v for v in train_cars if v is not None], [v for v in train_transit if v is not None],
                                direction, args.car_limit)
                cars = [number(r[feature]) for r in folds[held]["car"]]
                transit = [number(r[feature]) for r in folds[held]["transit"]]
                if threshold is None:
                    cells.append(f"{held}: -")
                    continue
                caught = sum(v is not None and flags(v, threshold) for v in transit)
                flagged = sum(v is not None and flags(v, threshold) for v in cars)
                caught_all += caught
                if cars and flagged > args.car_limit * len(cars):
                    ok = False
                cells.append(f"{held}: {caught}/{len(transit)} caught, {flagged}/{len(cars)} cars ({direction} {threshold:.4g})")
            if all(cell.endswith(": -") for cell in cells):
                continue  # no fold's training data gives a threshold
            results.append((ok, caught_all, feature, direction, cells))
    results.sort(key=lambda r: (r[0], r[1]), reverse=True)
    for ok, caught, feature, direction, cells in results[:args.top]:
        print(f"{feature} {direction}: {caught} transit caught held out, cars within the limit: {'yes' if ok else 'NO'}")
        for cell in cells:
            print("   " + cell)
    return 0


if __name__ == "__main__":
    sys.exit(main())
