#!/usr/bin/env python3
"""Trip quality on the real recordings: which labelled legs became driving trips.

Converts every TMD file, CBS day and enviroCar track with `roadsave convert`, replays it with `roadsave replay`, and
matches the trips against the labelled legs: a leg counts as taken for driving when driving trips (transportMode car or
unknown) cover at least half of it, and as a trip at all when any trips do. Prints one table per dataset and mode:
legs, legs taken for driving, legs with any trip, and the median start and end error of the driving trips that took
them (trip start/end minus labelled start/end, seconds). CBS days run twice: as recorded (GPS only) and with activity
records derived from the diary (transit reported as automotive, as Android's classifier does).

The enviroCar tracks are real car drives with the phone's GPS every 5 s (some 2 s) and no activity classifier: each
track is one labelled car leg from its first to its last point. They also get a table of their own, measured on the
drive's moving time: the time at GPS speed >= 2 m/s, i.e. the sum of the intervals from each point whose GPS Speed is
at least 2 m/s (the engines' movement threshold) to the next point. It gives the drives given a driving trip covering
>= 90 % of the moving time, the drives with a trip judged bus or rail, the drives split into more than one trip, and
the median start and end error: the first driving trip's start minus the first moving point, the last driving trip's
end minus the last moving point. Contains enviroCar data (enviroCar.org), ODbL.

Two more datasets of whole days and rides: the Aalto TrafficSense phones in Helsinki (8 Android phones on one day,
Google activity recognition and fused locations; the 103 legs their carriers logged by hand, 97 on buses, trams, metros
and trains and 6 by car) and the Go!Track rides in Aracaju (28 Android phones, GPS positions only; each ride, by car
or bus, one leg from its first to its last point). Helsinki adds a line of car legs found and transit legs taken for
driving; Go!Track the rides long enough to judge, >= 5 minutes and >= 20 fixes (cars found, buses taken for
driving), and leaves out the rides the converter left out of the phones' records (uploaded twice, or with a restarted clock).

Beside the engines, every dataset's legs are measured against a plain distance rule computed here from the same
converted fixes (`distance_rule_trips`): what a GPS tracker's motion logic does (Traccar's trips, by distance alone),
so each table shows what the engines add to it.

`--json FILE` writes the figures too: one entry per dataset and mode (with the distance rule's figures under
"distanceRule"; MobilityNet's car entries with those of their legs that had a usable fix in the first half under
"withUsableFixInFirstHalf"), the enviroCar entry with its drive figures under "drives".

`--features FILE` writes a CSV with one row per labelled leg and per detected ride (`scripts/ride_features.py`: speed
percentiles, time at speed, stops and their durations, accelerations, turns, GPS gaps moving or still, the walk and
wait before, steps while moving, activity reported), so that the modes' distributions can be put side by side.

`--settings FILE` replays with those thresholds in place of the built-in settings (`roadsave replay --settings`), and
`--keep DIR` leaves the converted recordings in DIR (they are otherwise converted in a temporary directory).

Usage: scripts/quality.py --roadsave PATH [--data DIR] [--json FILE] [--legs] [--features FILE] [--settings FILE]
                          [--keep DIR]
"""
import argparse, collections, contextlib, csv, datetime as dt, glob, gzip, json, math, os, statistics, subprocess, sys, tempfile

TRANSIT = {"bus", "tram", "metro", "train", "ferry"}
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ride_features  # noqa: E402

# Filled when --features is given: (dataset, kind "leg" or "ride", label, name, start, end, transport mode, features).
FEATURES = []
# `roadsave replay` options for --settings.
SETTINGS = []
# (dataset, label, the transport signs of the trips of the leg, whether one of them came within 12 h of the end of a
# driving trip before it) for every labelled leg.
SIGNS = []
# Signs that can show only on a ride after a driving trip of the same day (RideProfile.parkedCarValidity): their
# held-out car figures say how many drives they could have shown on.
AFTER_A_DRIVE = {"boardedAwayFromCar"}
# Signs that decide only under a condition the ride shows (RideProfile.decides), and the condition: the table's "decides"
# is whether the condition may let them, and the engine is not expected to let every showing decide.
CONDITIONAL = {"boardedAwayFromCar": "only when the phone walked to where the ride began"}
PARKED_CAR_VALIDITY = 12 * 3600
# (transportReason, transportSigns) of every trip replayed: what the engine decided on the signs.
VERDICTS = []
# (dataset, mode, name, taken, start error, end error) of every labelled leg against the distance rule's trips.
BASELINE = []
# The distance rule: a trip starts at the first fix more than DISTANCE_START metres (straight line) from where the
# device last stopped; while it lasts, a fix more than DISTANCE_MOVE metres from the last fix that moved is movement;
# DISTANCE_STOP seconds without movement end it, at its last movement. Only fixes the engines' GPS filter would use
# count (accuracy unknown or <= USABLE_ACCURACY), and after a silence longer than DISTANCE_STOP the device is taken
# to be where its next fix is. It is Traccar's kind of motion logic (a trip from position changes, ended by a parking
# time) with a start distance in place of a speed, so that fixes without speeds (CBS, Go!Track, Helsinki) are judged
# like the others.
DISTANCE_START = 200.0
DISTANCE_MOVE = 100.0
DISTANCE_STOP = 300.0
# Where each sign of public transport was fitted (docs/detection.md "Passengers"): its figures elsewhere are held
# out. Every sign was first built on the CBS diaries, the only public-transport recordings with positions; the
# underground sign's two conditions of issue 19 were fitted on the enviroCar drives. Steps while moving were set from
# how walking reads on a pedometer, not fitted on any recording.
FITTED_ON = {
    "gpsLostWhileMoving": {"CBS", "enviroCar"},
    "coarsePositionsAboard": {"Helsinki", "MobilityNet"},
    "stillWhileMoving": {"Helsinki"},
    "railSpeed": {"CBS"},
    "stationStops": {"CBS", "MobilityNet"},
    "stepsWhileMoving": set(),
    "boardedAfterWaiting": {"CBS"},
    "boardedAwayFromCar": {"MobilityNet"},
    "regularDwellStops": {"CBS"},
}
# A sign decides a ride only if it takes at most this share of the car drives of each dataset it was not fitted on
# for transit (per dataset, never in aggregate: a sign that holds on one large dataset may still fail another).
HELD_OUT_CAR_LIMIT = 0.02


def load(records):
    with open(records) as f:
        return [json.loads(line) for line in f]


def collect(dataset, records, legs, trips):
    """The feature rows of one device: each labelled leg (label, name, start, end), and each detected ride with
    the label of the leg it overlaps most ("none" when it overlaps none). `records`: its NDJSON file, or its records
    already read."""
    if FEATURES is None:
        return
    loaded = load(records) if isinstance(records, str) else records
    ends = sorted(trip[1] for trip in trips)
    previous = lambda t: max((e for e in ends if e <= t), default=None)
    for label, name, start, end in legs:
        FEATURES.append((dataset, "leg", label, name, start, end, "", "",
                         ride_features.features(loaded, start, end, previous(start))))
    for start, end, mode, reason, _ in trips:
        overlap = lambda leg: max(0.0, min(end, leg[3]) - max(start, leg[2]))
        best = max(legs, key=overlap, default=None)
        label = best[0] if best is not None and overlap(best) > 0 else "none"
        FEATURES.append((dataset, "ride", label, best[1] if best else "", start, end, mode, reason,
                         ride_features.features(loaded, start, end, previous(start - 1))))


def iso(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def replay(roadsave, dataset, path, extra, work):
    """The (start, end) of every trip of one recording, and its records file."""
    name = os.path.basename(path).split(".")[0]
    records = os.path.join(work, f"{dataset}-{name}{'-'.join([''] + [e.strip('-') for e in extra])}.ndjson")
    subprocess.run([roadsave, "convert", dataset, path, "--output", records] + extra, check=True,
                   stderr=subprocess.DEVNULL)
    return [trip for _, trip in replayed_trips(roadsave, records)], records


def replayed_trips(roadsave, records):
    """(user, (start, end, transportMode, transportReason, transportSigns)) of every trip `roadsave replay` gives for
    an NDJSON file, in its order; each verdict is noted for the signs' table."""
    out = subprocess.run([roadsave, "replay", records, "--quiet"] + SETTINGS, check=True, capture_output=True, text=True).stdout
    trips = []
    for line in out.splitlines():
        event = json.loads(line)
        if event.get("event") == "tripDidEnd":
            trip = (iso(event["startDate"]), iso(event["endDate"]), event.get("transportMode", "unknown"),
                    event.get("transportReason", "notClassified"), tuple(event.get("transportSigns", ())))
            trips.append((event["user"], trip))
            VERDICTS.append((trip[3], trip[4]))
    return trips


def driving(trips):
    return [trip for trip in trips if trip[2] in ("car", "unknown")]


def first_record_time(records):
    with open(records) as f:
        return json.loads(f.readline())["t"]


def last_record_time(records):
    t = None
    with open(records) as f:
        for line in f:
            t = json.loads(line)["t"]
    return t


def covered(trips, start, end):
    return sum(max(0.0, min(end, t1) - max(start, t0)) for t0, t1, *_ in trips)


def metres(lat1, lon1, lat2, lon2):
    """Great-circle distance (haversine)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * 6371008.8 * math.asin(math.sqrt(a))


def location_fixes(records):
    """(t, lat, lon) of the location records the GPS filter would use, by user, in time order. `records`: an NDJSON
    file or its records already read."""
    fixes = collections.defaultdict(list)
    loaded = load(records) if isinstance(records, str) else records
    for record in loaded:
        if record["kind"] == "location" and 0 <= record.get("hacc", 0) <= USABLE_ACCURACY:
            fixes[record["user"]].append((record["t"], record["lat"], record["lon"]))
    for user in fixes:
        fixes[user].sort()
    return fixes


def one_device(records):
    """The usable fixes of a file of one device's records (none when it has none)."""
    return next(iter(location_fixes(records).values()), [])


def distance_rule_trips(fixes):
    """The distance rule's trips over one device's fixes, shaped as replay's trips (mode unknown: the rule cannot tell
    a car from a bus or a walk)."""
    trips = []
    anchor = None  # where the device last stopped
    moved = None  # (t, lat, lon) of the trip's last movement
    start = None
    previous = None  # the time of the fix before
    for t, lat, lon in fixes:
        if moved is not None and t - moved[0] > DISTANCE_STOP:
            trips.append((start, moved[0], "unknown", "distanceRule", ()))
            anchor, moved = moved[1:], None
        if anchor is None or (moved is None and t - previous > DISTANCE_STOP):
            # After a silence longer than the stop time the rule starts afresh where the device is: it does not count
            # movement it did not see (Go!Track's phones record rides only, and appear at each ride's start).
            anchor = (lat, lon)
        elif moved is None:
            if metres(*anchor, lat, lon) > DISTANCE_START:
                start, moved = t, (t, lat, lon)
        elif metres(moved[1], moved[2], lat, lon) > DISTANCE_MOVE:
            moved = (t, lat, lon)
        previous = t
    if moved is not None:
        trips.append((start, moved[0], "unknown", "distanceRule", ()))
    return trips


def baseline(dataset, mode, name, trips, start, end):
    """Scores a leg against the distance rule's trips of its device, as `match` scores the engines'."""
    taken, _, start_error, end_error = match(trips, start, end)
    BASELINE.append((dataset, mode, name, taken, start_error, end_error))


def match(trips, start, end):
    """Whether driving trips cover half the leg, whether any trips do, and the start/end error of the driving trip
    overlapping it most."""
    length = max(end - start, 1.0)
    anything = covered(trips, start, end) >= 0.5 * length
    cars = driving(trips)
    taken = covered(cars, start, end) >= 0.5 * length
    best = max(cars, key=lambda t: max(0.0, min(end, t[1]) - max(start, t[0])), default=None)
    if not taken or best is None:
        return taken, anything, None, None
    return taken, anything, best[0] - start, best[1] - end


def leg_signs(dataset, label, trips, start, end):
    """Notes the transport signs of the trips that belong to a leg: those overlapping it for at least half of the
    shorter of the two."""
    signs = set()
    after_drive = False
    for t0, t1, _, _, trip_signs in trips:
        overlap = max(0.0, min(end, t1) - max(start, t0))
        if overlap > 0 and overlap >= 0.5 * min(t1 - t0, end - start):
            signs.update(trip_signs)
            after_drive = after_drive or any(0 <= t0 - e1 <= PARKED_CAR_VALIDITY and e0 < t0
                                             for e0, e1, mode, _, _ in trips if mode in ("car", "unknown"))
    SIGNS.append((dataset, label, signs, after_drive))


def tmd_legs(roadsave, data, work):
    """One leg per file: the label in the name, the whole recording."""
    rows = []
    for path in sorted(glob.glob(os.path.join(data, "us-transportation-mode/raw/*.csv.gz"))):
        mode = os.path.basename(path).split("_")[2].lower()
        trips, records = replay(roadsave, "tmd", path, [], work)
        start, end = first_record_time(records), last_record_time(records)
        rows.append(("TMD (Android activity)", mode, os.path.basename(path)) + match(trips, start, end))
        baseline("TMD (Android activity)", mode, os.path.basename(path), distance_rule_trips(one_device(records)),
                 start, end)
        leg_signs("TMD (Android activity)", mode, trips, start, end)
        collect("TMD (Android activity)", records, [(mode, os.path.basename(path), start, end)], trips)
    return rows


def cbs_legs(roadsave, data, work, derive):
    segments = list(csv.DictReader(open(os.path.join(data, "cbs-smart-survey-gps/segments_derived.csv"))))
    label = "CBS (diary activity)" if derive else "CBS (GPS only)"
    rows = []
    for path in sorted(glob.glob(os.path.join(data, "cbs-smart-survey-gps/split-by-day/*.csv.gz"))):
        day = os.path.basename(path)[:-3]
        trips, records = replay(roadsave, "cbs", path, ["--derive-activity"] if derive else [], work)
        distance_trips = distance_rule_trips(one_device(records))
        legs = []
        for segment in segments:
            if segment["file"] != day or segment["stop"] == "True" or not segment["mode"]:
                continue
            start, end = iso(segment["start_utc"]), iso(segment["end_utc"])
            if end - start < 60 or int(segment["n_points"]) < 10:
                continue  # a label with no track to judge (the single Car segment has one point)
            name = f"{day} {segment['start_utc'][11:16]}"
            rows.append((label, segment["mode"].lower(), name) + match(trips, start, end))
            baseline(label, segment["mode"].lower(), name, distance_trips, start, end)
            leg_signs(label, segment["mode"].lower(), trips, start, end)
            legs.append((segment["mode"].lower(), name, start, end))
        collect(label, records, legs, trips)
    return rows


MOBILITYNET_MODES = {"CAR": "car", "BUS": "bus", "TRAIN": "train", "SUBWAY": "metro", "LIGHT_RAIL": "tram",
                     "WALKING": "walk", "BICYCLING": "bike", "E_BIKE": "e-bike", "ESCOOTER": "e-scooter"}
# A car leg is scored only on a phone with this many fixes during it (two phones' car legs have none).
MOBILITYNET_CAR_FIXES = 5
# The engine's GPS filter (DetectionSettings.maximumHorizontalAccuracy): a fix less accurate is no use to a trip.
USABLE_ACCURACY = 50.0
# Where a found car leg's start error goes, per dataset: (seconds from the leg's start to the phone's first usable
# fix in it, seconds from that fix to the trip's start).
START_LATENCY = collections.defaultdict(list)
# Whether each MobilityNet car leg with a usable fix in its first half was found, per dataset (issue 44's target for
# these runs: a leg the phone could see in time is found).
FOUND_WITH_EARLY_FIX = collections.defaultdict(list)


def mobilitynet_group(os_name, config):
    """The phones' sensing, as the table groups them: always on, high or medium accuracy duty cycled, location off."""
    if config == "ACCURACY_CONTROL":
        return f"MobilityNet {os_name} always-on"
    if config == "POWER_CONTROL":
        return f"MobilityNet {os_name} no-GPS"
    return f"MobilityNet {os_name} {'high' if config.startswith('HA') else 'medium'}-acc"


def fix_times(records):
    """The times of each device's location records in an NDJSON file, by user, and of those the engine can use."""
    times, usable = collections.defaultdict(list), collections.defaultdict(list)
    with open(records) as f:
        for line in f:
            record = json.loads(line)
            if record["kind"] == "location":
                times[record["user"]].append(record["t"])
                if 0 <= record.get("hacc", 0) <= USABLE_ACCURACY:
                    usable[record["user"]].append(record["t"])
    return times, usable


def mobilitynet_legs(roadsave, data, work):
    """Every phone's run of the shared MobilityNet journeys: one device each, replayed together, each leg scored on
    every phone that carried it (the legs were marked once and are true for all eight phones). Waits are not legs."""
    folder = os.path.join(data, "mobilitynet-whole-journeys")
    records = os.path.join(work, "mobilitynet.ndjson")
    legs_file = os.path.join(work, "mobilitynet-legs.csv")
    subprocess.run([roadsave, "convert", "mobilitynet", folder, "--output", records, "--legs", legs_file,
                    "--no-progress"], check=True, stderr=subprocess.DEVNULL)
    trips = collections.defaultdict(list)
    for user, trip in replayed_trips(roadsave, records):
        trips[user].append(trip)
    fixes, usable_fixes = fix_times(records)
    distance_trips = {user: distance_rule_trips(f) for user, f in location_fixes(records).items()}
    rows = []
    by_user = collections.defaultdict(list)
    if FEATURES is not None:
        with open(records) as f:
            for line in f:
                record = json.loads(line)
                by_user[record["user"]].append(record)
    legs_of = collections.defaultdict(list)
    for leg in csv.DictReader(open(legs_file)):
        mode = MOBILITYNET_MODES.get(leg["mode"])
        if mode is None:
            continue  # waiting (STOPPED): no travel to judge
        start, end = float(leg["start_ts"]), float(leg["end_ts"])
        if mode == "car" and sum(start <= t <= end for t in fixes[leg["user"]]) < MOBILITYNET_CAR_FIXES:
            continue  # nothing a phone could tell the leg from
        dataset = mobilitynet_group(leg["os"], leg["config"])
        name = f"{leg['user']} {leg['leg_id']}"
        rows.append((dataset, mode, name) + match(trips[leg["user"]], start, end))
        baseline(dataset, mode, name, distance_trips.get(leg["user"], []), start, end)
        if mode == "car":
            start_error = rows[-1][5]
            first_fix = next((t for t in usable_fixes[leg["user"]] if start <= t <= end), None)
            if first_fix is not None and first_fix <= (start + end) / 2:
                FOUND_WITH_EARLY_FIX[dataset].append(rows[-1][3])
            if start_error is not None and first_fix is not None:
                START_LATENCY[dataset].append((first_fix - start, start + start_error - first_fix))
        leg_signs(dataset, mode, trips[leg["user"]], start, end)
        legs_of[leg["user"]].append((dataset, mode, name, start, end))
    for user, legs in legs_of.items():
        # One device's legs are all of one phone's sensing: its rides are counted under the same dataset.
        collect(legs[0][0], by_user[user], [(mode, name, start, end) for _, mode, name, start, end in legs], trips[user])
    return rows


ENVIROCAR = "enviroCar (GPS only)"
MOVING = 2.0  # m/s: a point at this GPS speed or more is moving
COVERED = 0.9  # share of the moving time driving trips must cover


def envirocar_points(path):
    """(t, GPS speed in m/s or None) of every point with a time and coordinates, read from the track itself."""
    track = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    points = []
    for feature in track["features"]:
        properties = feature.get("properties") or {}
        coordinates = (feature.get("geometry") or {}).get("coordinates")
        if not properties.get("time") or not coordinates:
            continue
        speed = ((properties.get("phenomenons") or {}).get("GPS Speed") or {}).get("value")
        points.append((iso(properties["time"]), None if speed is None else speed / 3.6))
    return sorted(points, key=lambda p: p[0])


def moving_intervals(points):
    """The intervals from each moving point to the next point."""
    return [(t0, t1) for (t0, v0), (t1, _) in zip(points, points[1:]) if v0 is not None and v0 >= MOVING]


def envirocar_drives(roadsave, data, work):
    """Per track: the leg row for the main table and the drive's own figures."""
    rows, drives = [], []
    for path in sorted(glob.glob(os.path.join(data, "envirocar-car-tracks/*/*.json.gz"))):
        name = os.path.relpath(path, os.path.join(data, "envirocar-car-tracks"))
        trips, records = replay(roadsave, "envirocar", path, [], work)
        points = envirocar_points(path)
        rows.append((ENVIROCAR, "car", name) + match(trips, points[0][0], points[-1][0]))
        baseline(ENVIROCAR, "car", name, distance_rule_trips(one_device(records)), points[0][0], points[-1][0])
        leg_signs(ENVIROCAR, "car", trips, points[0][0], points[-1][0])
        collect(ENVIROCAR, records, [("car", name, points[0][0], points[-1][0])], trips)
        moving = moving_intervals(points)
        moving_time = sum(t1 - t0 for t0, t1 in moving)
        cars = sorted(driving(trips))
        in_trips = sum(covered(cars, t0, t1) for t0, t1 in moving)
        moving_points = [t for t, v in points if v is not None and v >= MOVING]
        drive = {"track": name, "trips": len(trips), "movingTime": moving_time,
                 "covered": moving_time > 0 and in_trips >= COVERED * moving_time,
                 "transit": [f"{mode} ({reason})" for _, _, mode, reason, _ in trips if mode in ("bus", "rail")],
                 "startError": None, "endError": None}
        if cars and moving_points:
            drive["startError"] = cars[0][0] - moving_points[0]
            drive["endError"] = cars[-1][1] - moving_points[-1]
        drives.append(drive)
    return rows, drives


def envirocar_summary(drives):
    median = lambda values: statistics.median(values) if values else None
    reasons = collections.Counter(reason for d in drives for reason in d["transit"])
    return {"drives": len(drives), "movingHours": sum(d["movingTime"] for d in drives) / 3600,
            "drivingCoveringMovingTime": sum(d["covered"] for d in drives),
            "judgedBusOrRail": sum(bool(d["transit"]) for d in drives), "busOrRailTrips": dict(reasons),
            "splitIntoTrips": sum(d["trips"] > 1 for d in drives), "noTrip": sum(d["trips"] == 0 for d in drives),
            "medianStartError": median([d["startError"] for d in drives if d["startError"] is not None]),
            "medianEndError": median([d["endError"] for d in drives if d["endError"] is not None])}


def print_envirocar(summary):
    n = summary["drives"]
    share = lambda k: f"{k} ({100 * k / n:.0f} %)" if n else "-"
    signed = lambda v: "-" if v is None else f"{v:+.0f}"
    print()
    print(f"enviroCar drives (each track one car leg; moving = GPS speed >= {MOVING:g} m/s; "
          "Contains enviroCar data (enviroCar.org), ODbL)")
    print(f"{'drives':>6}{'moving h':>10}{'driving >= 90 % moving':>24}{'bus or rail':>13}{'split':>11}"
          f"{'no trip':>9}{'start err (median s)':>22}{'end err':>9}")
    print(f"{n:>6}{summary['movingHours']:>10.1f}{share(summary['drivingCoveringMovingTime']):>24}"
          f"{share(summary['judgedBusOrRail']):>13}{share(summary['splitIntoTrips']):>11}{summary['noTrip']:>9}"
          f"{signed(summary['medianStartError']):>22}{signed(summary['medianEndError']):>9}")
    if summary["busOrRailTrips"]:
        print("  bus or rail trips: " + ", ".join(f"{count} {reason}" for reason, count in
                                                  sorted(summary["busOrRailTrips"].items())))


HELSINKI = "Helsinki (Android activity)"


def folder_dataset(roadsave, dataset, folder, work):
    """Converts a folder dataset with its legs (`roadsave convert DATASET FOLDER --legs`) and replays it: the legs'
    rows, each device's trips, the distance rule's trips by user, and the records by user when --features needs them."""
    records = os.path.join(work, f"{dataset}.ndjson")
    legs_file = os.path.join(work, f"{dataset}-legs.csv")
    subprocess.run([roadsave, "convert", dataset, folder, "--output", records, "--legs", legs_file],
                   check=True, stderr=subprocess.DEVNULL)
    trips = collections.defaultdict(list)
    for user, trip in replayed_trips(roadsave, records):
        trips[user].append(trip)
    loaded = load(records)
    distance_trips = {user: distance_rule_trips(f) for user, f in location_fixes(loaded).items()}
    by_user = collections.defaultdict(list)
    if FEATURES is not None:
        for record in loaded:
            by_user[record["user"]].append(record)
    return list(csv.DictReader(open(legs_file))), trips, distance_trips, by_user


def score_legs(legs, trips, distance_trips, by_user, signs=True):
    """Rows of the main table for (dataset, mode, name, user, start, end) legs, with the distance rule's rows, and
    (when `signs`) their transport signs and features."""
    rows = []
    legs_of = collections.defaultdict(list)
    for dataset, mode, name, user, start, end in legs:
        rows.append((dataset, mode, name) + match(trips[user], start, end))
        baseline(dataset, mode, name, distance_trips.get(user, []), start, end)
        if signs:
            leg_signs(dataset, mode, trips[user], start, end)
            legs_of[user].append((mode, name, start, end))
    for user, user_legs in legs_of.items():
        collect(legs[0][0], by_user[user], user_legs, trips[user])
    return rows


def helsinki_legs(roadsave, data, work):
    """The Aalto TrafficSense phones' day in Helsinki: every leg of the hand-kept log (vehicle departure to arrival)
    scored on the phone that logged it."""
    legs, trips, distance_trips, by_user = folder_dataset(
        roadsave, "aalto", os.path.join(data, "aalto-trafficsense-helsinki"), work)
    return score_legs([(HELSINKI, leg["mode"], f"{leg['user']} {leg['line_type']} {leg['line_name']} "
                        f"line {leg['log_line']}", leg["user"], float(leg["start_ts"]), float(leg["end_ts"]))
                       for leg in legs], trips, distance_trips, by_user)


GOTRACK = "Go!Track (GPS only)"
GOTRACK_TARGET = "Go!Track >= 5 min, >= 20 fixes"
# The rides long enough to judge: long enough to be a trip, with fixes enough to see it.
GOTRACK_MINUTES, GOTRACK_FIXES = 5, 20
# Rides in the legs file whose points the converter left out of the records (uploaded twice, a restarted clock).
LEFT_OUT = collections.Counter()


def gotrack_legs(roadsave, data, work):
    """The Go!Track rides: each ride kept in its phone's records one leg from its first to its last point, scored on
    its phone's device; again under GOTRACK_TARGET for the rides of >= 5 minutes and >= 20 fixes."""
    legs, trips, distance_trips, by_user = folder_dataset(
        roadsave, "gotrack", os.path.join(data, "gotrack-aracaju"), work)
    fixes = location_fixes(os.path.join(work, "gotrack.ndjson"))
    kept = []
    for leg in legs:
        if leg["status"] != "kept":
            LEFT_OUT[leg["status"].split(" ")[0]] += 1
            continue
        kept.append((leg, (leg["mode"], f"{leg['user']} track {leg['track_id']}", leg["user"],
                           float(leg["start_ts"]), float(leg["end_ts"]))))
    rows = score_legs([(GOTRACK,) + entry for _, entry in kept], trips, distance_trips, by_user)
    target = [(GOTRACK_TARGET,) + entry for leg, entry in kept
              if float(leg["duration_s"]) >= 60 * GOTRACK_MINUTES and int(leg["fixes"]) >= GOTRACK_FIXES]
    for _, mode, _, user, start, end in target:
        if mode == "car":
            GOTRACK_MOVING.append(moving_coverage(fixes[user], driving(trips[user]), start, end))
    return rows + score_legs(target, trips, distance_trips, by_user, signs=False)


# (seconds moving, share of them covered by driving trips) of each Go!Track car ride of the target set.
GOTRACK_MOVING = []


def moving_coverage(fixes, trips, start, end):
    """A ride's moving time (the intervals between fixes whose displacement says >= MOVING m/s: Go!Track has no GPS
    speed) and the share of it driving trips cover. Riders started and stopped the recording themselves, some long
    after they parked: the moving time is what a trip can be asked to cover, as for the enviroCar drives."""
    moving = [(a[0], b[0]) for a, b in zip(fixes, fixes[1:])
              if start <= a[0] and b[0] <= end and b[0] > a[0] and metres(a[1], a[2], b[1], b[2]) / (b[0] - a[0]) >= MOVING]
    total = sum(b - a for a, b in moving)
    covered = sum(max(0.0, min(b, trip[1]) - max(a, trip[0])) for a, b in moving for trip in trips)
    return total, (covered / total if total else 0.0)


def print_new_datasets(groups):
    """The summary lines of Helsinki and Go!Track: cars found, transit taken for driving, start errors."""
    def count(dataset, modes):
        chosen = [g for (d, m), g in groups.items() if d == dataset and m in modes]
        return sum(g["taken"] for g in chosen), sum(g["legs"] for g in chosen)
    def median_start(dataset, mode):
        g = groups.get((dataset, mode))
        return f"{statistics.median(g['start']):+.0f} s" if g and g["start"] else "-"
    if any(d == HELSINKI for d, _ in groups):
        found, legs = count(HELSINKI, {"car"})
        taken, transit = count(HELSINKI, TRANSIT)
        per_mode = ", ".join(f"{m} {'/'.join(map(str, count(HELSINKI, {m})))}"
                             for m in ("bus", "tram", "metro", "train") if count(HELSINKI, {m})[1])
        print(f"\nHelsinki: car legs found {found}/{legs} (median start error {median_start(HELSINKI, 'car')}), "
              f"transit legs taken for driving {taken}/{transit} ({per_mode})")
    if any(d == GOTRACK for d, _ in groups):
        cars, car_rides = count(GOTRACK_TARGET, {"car"})
        buses, bus_rides = count(GOTRACK_TARGET, {"bus"})
        left_out = ", ".join(f"{n} {why}" for why, n in sorted(LEFT_OUT.items()))
        print(f"Go!Track rides >= {GOTRACK_MINUTES} min and >= {GOTRACK_FIXES} fixes: cars found {cars}/{car_rides} "
              f"(median start error {median_start(GOTRACK_TARGET, 'car')}), buses taken for driving "
              f"{buses}/{bus_rides}; rides left out of the records: {left_out or 'none'}")
        still = sum(1 for seconds, _ in GOTRACK_MOVING if seconds < 60)
        half = sum(1 for seconds, share in GOTRACK_MOVING if seconds >= 60 and share >= 0.5)
        most = sum(1 for seconds, share in GOTRACK_MOVING if seconds >= 60 and share >= 0.9)
        print(f"Go!Track car rides on their moving time (>= {MOVING:.0f} m/s between fixes; riders often recorded long "
              f"after parking): {half} of {len(GOTRACK_MOVING) - still} at least half covered by driving trips, {most} "
              f"at least 90 %; {still} never moved for a minute")


def baseline_table(groups):
    """The distance rule per dataset and mode, beside the engines' legs taken."""
    base = {}
    for dataset, mode, _, taken, start_error, end_error in BASELINE:
        entry = base.setdefault((dataset, mode), {"legs": 0, "taken": 0, "start": [], "end": []})
        entry["legs"] += 1
        entry["taken"] += taken
        if start_error is not None:
            entry["start"].append(start_error)
            entry["end"].append(end_error)
    return base


def print_baseline(base, groups, width):
    print(f"\ndistance rule (a trip from the first fix > {DISTANCE_START:.0f} m from the last stop, while fixes move "
          f"> {DISTANCE_MOVE:.0f} m, ended after {DISTANCE_STOP / 60:.0f} min without; fixes <= "
          f"{USABLE_ACCURACY:.0f} m) beside the engines")
    print(f"{'dataset':<{width}}{'mode':<10}{'legs':>6}{'engines: driving':>18}{'rule: taken':>14}"
          f"{'start err (median s)':>22}{'end err':>9}")
    for (dataset, mode), b in sorted(base.items()):
        engines, taken = groups.get((dataset, mode), {"taken": 0})["taken"], b["taken"]
        start = f"{statistics.median(b['start']):+.0f}" if b["start"] else "-"
        end = f"{statistics.median(b['end']):+.0f}" if b["end"] else "-"
        print(f"{dataset:<{width}}{mode:<10}{b['legs']:>6}{engines:>18}{taken:>14}{start:>22}{end:>9}")
    for dataset in sorted({d for d, _ in base}):
        transit = [(b, groups.get((d, m), {"taken": 0})["taken"]) for (d, m), b in base.items()
                   if d == dataset and m in TRANSIT]
        if transit:
            legs = sum(b["legs"] for b, _ in transit)
            print(f"{dataset:<{width}}{'transit':<10}{legs:>6}{sum(e for _, e in transit):>18}"
                  f"{sum(b['taken'] for b, _ in transit):>14}")


def family(dataset):
    return dataset.split(" ")[0]


def sign_table():
    """Per sign: the legs of each dataset that show it, by kind (transit or car), and whether its held-out car share
    keeps it deciding."""
    datasets = sorted({d for d, _, _, _ in SIGNS})
    result = []
    for sign, fitted in FITTED_ON.items():
        entry = {"sign": sign, "fittedOn": sorted(fitted), "datasets": {}}
        held_out_cars = held_out_car_signs = held_out_could = 0
        # Judged per dataset, never in aggregate: the held-out cars of each family it was not fitted on.
        by_family = collections.defaultdict(lambda: [0, 0])
        for dataset in datasets:
            for kind, labels in (("transit", TRANSIT), ("car", {"car"})):
                legs = [(signs, after) for d, label, signs, after in SIGNS if d == dataset and label in labels]
                if not legs:
                    continue
                shown = sum(sign in signs for signs, _ in legs)
                entry["datasets"].setdefault(dataset, {})[kind] = {"legs": len(legs), "showing": shown}
                if kind == "car" and family(dataset) not in fitted:
                    held_out_cars += len(legs)
                    held_out_car_signs += shown
                    held_out_could += sum(after for _, after in legs)
                    by_family[family(dataset)][0] += len(legs)
                    by_family[family(dataset)][1] += shown
        entry["heldOutCarDrives"] = held_out_cars
        entry["heldOutCarShowing"] = held_out_car_signs
        if sign in AFTER_A_DRIVE:
            # The held-out drives it could have shown on at all (with a driving trip before them that day).
            entry["heldOutCarDrivesAfterADrive"] = held_out_could
        entry["heldOutCarsByDataset"] = {name: {"legs": legs, "showing": shown}
                                         for name, (legs, shown) in sorted(by_family.items())}
        entry["deciding"] = all(shown <= HELD_OUT_CAR_LIMIT * legs for legs, shown in by_family.values())
        # What the engine did with rides whose first sign this was: decided by it, or not.
        firsts = [reason == sign for reason, signs in VERDICTS if signs and signs[0] == sign]
        entry["engineDecides"] = all(firsts) if firsts else None
        result.append(entry)
    return result


def print_sign_table(signs):
    print("\ntransport signs (legs showing each; held out = datasets it was not fitted on; a sign decides only if at most "
          f"{HELD_OUT_CAR_LIMIT:.0%} of the car drives of each held-out dataset show it: the worst one is named)")
    columns = [(d, k) for d in sorted({d for e in signs for d in e["datasets"]}) for k in ("transit", "car")
               if any(k in e["datasets"].get(d, {}) for e in signs)]
    def heading(dataset, kind):
        # "CBS GPS", "MobilityNet ios high-acc": the family and what tells its tables apart.
        detail = dataset.split("(")[1].split(" ")[0] if "(" in dataset else " ".join(dataset.split(" ")[1:])
        return f"{family(dataset)} {detail} {kind}".replace("  ", " ")
    cell = max([22] + [len(heading(d, k)) + 2 for d, k in columns])
    print(f"{'sign':<22}{'fitted on':<16}" + "".join(f"{heading(d, k):>{cell}}" for d, k in columns)
          + f"{'held-out cars':>15}  {'worst held-out dataset':<24}decides")
    for e in signs:
        cells = []
        for d, k in columns:
            c = e["datasets"].get(d, {}).get(k)
            cells.append(f"{c['showing']}/{c['legs']}" if c else "-")
        fitted = ", ".join(e["fittedOn"]) or "none"
        by = e["heldOutCarsByDataset"]
        worst = max(by, key=lambda name: by[name]["showing"] / by[name]["legs"], default=None)
        worst_text = f"{worst} {by[worst]['showing']}/{by[worst]['legs']}" if worst else "-"
        print(f"{e['sign']:<22}{fitted:<16}" + "".join(f"{c:>{cell}}" for c in cells)
              + f"{e['heldOutCarShowing']:>9}/{e['heldOutCarDrives']:<5}  {worst_text:<24}{'yes' if e['deciding'] else 'no'}")
    for e in signs:
        if "heldOutCarDrivesAfterADrive" in e:
            print(f"{e['sign']} can show only after a driving trip the same day: {e['heldOutCarDrivesAfterADrive']} of "
                  f"the {e['heldOutCarDrives']} held-out car drives had one")
    for sign, condition in CONDITIONAL.items():
        print(f"{sign} decides {condition}")
    for e in signs:
        if e["sign"] in CONDITIONAL:
            continue
        if e["engineDecides"] is not None and e["engineDecides"] != e["deciding"]:
            print(f"quality: the engine {'lets' if e['engineDecides'] else 'does not let'} {e['sign']} decide, "
                  f"against this table: RideProfile.weakSigns needs changing", file=sys.stderr)


def print_start_latency():
    """Where the start error of the car legs found goes: the phone's GPS waking, then the engine's own wait."""
    print("\nMobilityNet car legs found: where the start error goes (medians, s; usable fix = accuracy <= "
          f"{USABLE_ACCURACY:.0f} m)")
    print(f"{'dataset':<32}{'found':>6}{'leg start to 1st usable fix':>29}{'that fix to trip start':>24}")
    everything = [pair for pairs in START_LATENCY.values() for pair in pairs]
    for dataset, pairs in sorted(START_LATENCY.items()) + [("all phones", everything)]:
        waking = statistics.median(p[0] for p in pairs)
        engine = statistics.median(p[1] for p in pairs)
        print(f"{dataset:<32}{len(pairs):>6}{waking:>+29.0f}{engine:>+24.0f}")
    early = [found for founds in FOUND_WITH_EARLY_FIX.values() for found in founds]
    print(f"car legs with a usable fix in their first half: {sum(early)} of {len(early)} found ("
          + ", ".join(f"{d.removeprefix('MobilityNet ')} {sum(f)}/{len(f)}" for d, f in sorted(FOUND_WITH_EARLY_FIX.items()))
          + ")")


def table(rows):
    groups = {}
    for dataset, mode, _, taken, anything, start_error, end_error in rows:
        group = groups.setdefault((dataset, mode), {"legs": 0, "taken": 0, "any": 0, "start": [], "end": []})
        group["legs"] += 1
        group["taken"] += taken
        group["any"] += anything
        if start_error is not None:
            group["start"].append(start_error)
            group["end"].append(end_error)
    return groups


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roadsave", default=".build/release/roadsave")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    parser.add_argument("--json")
    parser.add_argument("--legs", action="store_true", help="also print every leg")
    parser.add_argument("--features", help="write the features of every leg and detected ride to this CSV")
    parser.add_argument("--settings", help="replay with these settings (JSON, any subset of the fields)")
    parser.add_argument("--keep", help="convert the recordings into this directory and leave them there")
    args = parser.parse_args()
    global SETTINGS
    SETTINGS = ["--settings", os.path.abspath(args.settings)] if args.settings else []
    global FEATURES
    if not args.features:
        FEATURES = None
    if not os.path.isdir(os.path.join(args.data, "us-transportation-mode")):
        print(f"quality: no recordings at {args.data}: skipped", file=sys.stderr)
        return 0
    drives = []
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    with (contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory()) as work:
        rows = tmd_legs(args.roadsave, args.data, work)
        rows += cbs_legs(args.roadsave, args.data, work, derive=False)
        rows += cbs_legs(args.roadsave, args.data, work, derive=True)
        if os.path.isdir(os.path.join(args.data, "mobilitynet-whole-journeys")):
            rows += mobilitynet_legs(args.roadsave, args.data, work)
        else:
            print(f"quality: no MobilityNet journeys at {args.data}: those tables skipped", file=sys.stderr)
        if os.path.isdir(os.path.join(args.data, "envirocar-car-tracks")):
            envirocar_rows, drives = envirocar_drives(args.roadsave, args.data, work)
            rows += envirocar_rows
        else:
            print(f"quality: no enviroCar tracks at {args.data}: that table skipped", file=sys.stderr)
        for folder, name, legs in (("aalto-trafficsense-helsinki", "Aalto TrafficSense (Helsinki) legs", helsinki_legs),
                                   ("gotrack-aracaju", "Go!Track rides", gotrack_legs)):
            if os.path.isdir(os.path.join(args.data, folder)):
                rows += legs(args.roadsave, args.data, work)
            else:
                print(f"quality: no {name} at {args.data}: those rows skipped", file=sys.stderr)
    if args.legs:
        for row in rows:
            print(*[f"{v:.0f}" if isinstance(v, float) else v for v in row], sep="\t")
        for drive in drives:
            print(drive["track"], f"{drive['trips']} trips", f"moving {drive['movingTime']:.0f} s",
                  "covered" if drive["covered"] else "not covered", *drive["transit"],
                  *[f"{key} {drive[key]:+.0f}" for key in ("startError", "endError") if drive[key] is not None],
                  sep="\t")
    groups = table(rows)
    width = max([24] + [len(d) + 2 for d, _ in groups])
    print(f"{'dataset':<{width}}{'mode':<10}{'legs':>6}{'taken for driving':>19}{'any trip':>10}"
          f"{'start err (median s)':>22}{'end err':>9}")
    summary = []
    for (dataset, mode), g in sorted(groups.items()):
        kind = "transit" if mode in TRANSIT else mode
        start = f"{statistics.median(g['start']):+.0f}" if g["start"] else "-"
        end = f"{statistics.median(g['end']):+.0f}" if g["end"] else "-"
        share = f"{g['taken']} ({100 * g['taken'] / g['legs']:.0f} %)"
        print(f"{dataset:<{width}}{mode:<10}{g['legs']:>6}{share:>19}{g['any']:>10}{start:>22}{end:>9}")
        summary.append({"dataset": dataset, "mode": mode, "legs": g["legs"], "taken": g["taken"], "anyTrip": g["any"],
                        "medianStartError": statistics.median(g["start"]) if g["start"] else None,
                        "medianEndError": statistics.median(g["end"]) if g["end"] else None})
    for dataset in sorted({d for d, _ in groups}):
        transit = [g for (d, m), g in groups.items() if d == dataset and m in TRANSIT]
        legs, taken = sum(g["legs"] for g in transit), sum(g["taken"] for g in transit)
        anything = sum(g["any"] for g in transit)
        if legs:
            print(f"{dataset:<{width}}{'transit':<10}{legs:>6}{f'{taken} ({100 * taken / legs:.0f} %)':>19}{anything:>10}")
    print_new_datasets(groups)
    base = baseline_table(groups)
    print_baseline(base, groups, width)
    for entry in summary:
        if entry["mode"] == "car" and entry["dataset"] in FOUND_WITH_EARLY_FIX:
            found = FOUND_WITH_EARLY_FIX[entry["dataset"]]
            entry["withUsableFixInFirstHalf"] = {"legs": len(found), "taken": sum(found)}
        b = base.get((entry["dataset"], entry["mode"]))
        if b:
            entry["distanceRule"] = {"legs": b["legs"], "taken": b["taken"],
                                     "medianStartError": statistics.median(b["start"]) if b["start"] else None,
                                     "medianEndError": statistics.median(b["end"]) if b["end"] else None}
    if START_LATENCY:
        print_start_latency()
    if drives:
        figures = envirocar_summary(drives)
        print_envirocar(figures)
        for entry in summary:
            if entry["dataset"] == ENVIROCAR:
                entry["drives"] = figures
    signs = sign_table()
    print_sign_table(signs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary + [{"signs": signs}], f, indent=1)
    if args.features:
        with open(args.features, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["dataset", "kind", "label", "name", "start", "end", "transportMode",
                             "transportReason"] + ride_features.FIELDS)
            for dataset, kind, label, name, start, end, mode, reason, values in FEATURES:
                writer.writerow([dataset, kind, label, name, f"{start:.3f}", f"{end:.3f}", mode, reason]
                                + ride_features.row(values))
        print(f"quality: features of {len(FEATURES)} legs and rides in {args.features}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
