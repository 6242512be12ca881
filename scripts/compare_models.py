#!/usr/bin/env python3
"""Hand-written signs or a small model: which tells passengers from drivers on a dataset it was not fitted on.

Reads the features CSV of `scripts/quality.py --features FILE` and takes every detected ride that overlaps a labelled
car leg or a labelled transit leg (bus, tram, metro, train, ferry). Folds are the datasets (CBS, MobilityNet, TMD,
enviroCar, Go!Track, Helsinki). For each fold it prints:

- the engine's own verdict (the shipped signs): transit rides judged bus or rail, car rides judged bus or rail;
- each model, fitted on the other folds and scored on this one: a depth-3 decision tree and a depth-3 gradient-boosted
  ensemble (scikit-learn), each on two feature sets (the ride's own GPS features, which every dataset has; and every
  feature of `ride_features.FIELDS`, the walk, wait and activity around the ride included). A model's threshold is
  the one that flags at most `--car-limit` of the training folds' car rides, as `fit_signs.py` fits a sign's.

The engine's verdict is the yardstick the models must beat on held-out cars first (a driver taken for a passenger
loses the crash alert's context) and on held-out transit second.

  scripts/compare_models.py FEATURES.csv [--car-limit 0.02]

Needs scikit-learn (`pip install scikit-learn`); it is an offline analysis, not part of `make test`.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ride_features  # noqa: E402

TRANSIT = {"bus", "tram", "metro", "train", "ferry"}
FOLDS = ["CBS", "MobilityNet", "TMD", "enviroCar", "Go!Track", "Helsinki"]
# The ride's own GPS features: every dataset has them, whatever the phone recorded around the ride.
INSIDE = ["duration_s", "distance_m", "speed_p50", "speed_p85", "speed_p95", "speed_max2", "share_moving",
          "time_ge_8_s", "time_ge_12_s", "time_ge_25_s", "time_ge_42_s", "stops_per_km", "stop_p50_s",
          "stop_share_8_45", "stops_8_45_per_km", "accel_p95", "decel_p95", "heading_change_per_km", "gaps_moving",
          "longest_gap_moving_s"]


def number(text):
    try:
        return float(text)
    except ValueError:
        return float("nan")


def fold_scores(flagged, is_transit, folds):
    """Per fold: (transit caught, transit rides, cars flagged, car rides)."""
    scores = {}
    for name in FOLDS:
        members = [i for i, fold in enumerate(folds) if fold == name]
        scores[name] = (sum(flagged[i] and is_transit[i] for i in members), sum(is_transit[i] for i in members),
                        sum(flagged[i] and not is_transit[i] for i in members),
                        sum(not is_transit[i] for i in members))
    return scores


def held_out_verdicts(make_model, matrix, is_transit, folds, car_limit, numpy):
    """Each ride's verdict from a model fitted on the other folds, its threshold flagging <= car_limit of their cars."""
    flagged = [False] * len(folds)
    labels = numpy.array(is_transit)
    for held in FOLDS:
        train = numpy.array([fold != held for fold in folds])
        test = ~train
        if not test.any():
            continue
        columns = ~numpy.all(numpy.isnan(matrix[train]), axis=0)  # a feature no training ride has says nothing
        features = matrix[:, columns]
        model = make_model()
        model.fit(features[train], labels[train])
        probability = model.predict_proba(features)[:, 1]
        car_probabilities = sorted(probability[train & ~labels], reverse=True)
        allowed = int(car_limit * len(car_probabilities))
        threshold = car_probabilities[allowed] + 1e-9 if allowed < len(car_probabilities) else 0.0
        for i in numpy.flatnonzero(test):
            flagged[i] = bool(probability[i] >= threshold)
    return flagged


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="Needs scikit-learn (pip install scikit-learn).")
    parser.add_argument("features", help="the CSV of scripts/quality.py --features")
    parser.add_argument("--car-limit", type=float, default=0.02,
                        help="the share of training car rides a model may flag (default 0.02)")
    args = parser.parse_args()
    try:
        import numpy
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.tree import DecisionTreeClassifier
    except ImportError:
        print("compare_models: needs scikit-learn: pip install scikit-learn", file=sys.stderr)
        return 2
    rides = [row for row in csv.DictReader(open(args.features))
             if row["kind"] == "ride" and (row["label"] == "car" or row["label"] in TRANSIT)]
    if not rides:
        print(f"compare_models: no ride over a car or transit leg in {args.features}", file=sys.stderr)
        return 2
    is_transit = [row["label"] in TRANSIT for row in rides]
    folds = [row["dataset"].split(" ")[0] for row in rides]
    engine = [row["transportMode"] not in ("car", "unknown", "") for row in rides]

    rows = [("engine's signs (shipped)", fold_scores(engine, is_transit, folds))]
    models = {
        "decision tree, depth 3": lambda: DecisionTreeClassifier(max_depth=3, min_samples_leaf=5,
                                                                 class_weight="balanced", random_state=0),
        "gradient boosting, depth 3": lambda: HistGradientBoostingClassifier(max_depth=3, max_iter=100,
                                                                             class_weight="balanced", random_state=0),
    }
    for feature_set_name, names in (("ride's GPS", INSIDE), ("all, around the ride too", ride_features.FIELDS)):
        matrix = numpy.array([[number(row[name]) for name in names] for row in rides])
        for model_name, make_model in models.items():
            # The tree takes no missing values: a missing feature reads as -1, below every real one.
            data = numpy.nan_to_num(matrix, nan=-1.0) if "tree" in model_name else matrix
            flagged = held_out_verdicts(make_model, data, is_transit, folds, args.car_limit, numpy)
            rows.append((f"{model_name}, {feature_set_name}", fold_scores(flagged, is_transit, folds)))

    print("rides over car or transit legs; models scored on the fold left out of their fit "
          f"(threshold: <= {args.car_limit:.0%} of the training folds' cars flagged)")
    header = ["decision"] + [f"{name} transit" for name in FOLDS] + [f"{name} cars" for name in FOLDS] + \
        ["transit caught", "cars flagged"]
    print(" | ".join(header))
    for name, scores in rows:
        transit = [f"{scores[f][0]}/{scores[f][1]}" for f in FOLDS]
        cars = [f"{scores[f][2]}/{scores[f][3]}" for f in FOLDS]
        caught = sum(scores[f][0] for f in FOLDS)
        transit_all = sum(scores[f][1] for f in FOLDS)
        flagged = sum(scores[f][2] for f in FOLDS)
        cars_all = sum(scores[f][3] for f in FOLDS)
        print(" | ".join([name] + transit + cars + [f"{caught}/{transit_all}", f"{flagged}/{cars_all}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
