#!/usr/bin/env python3
"""What a ride looked like, as numbers: the quantities a car-or-transit decision could use, computed from the
project's records (PROTOCOL §2 NDJSON) over a window of time, for labelled legs and detected rides alike, so that
the modes' distributions can be put side by side (`scripts/quality.py --features FILE`).

Speeds are GPS speeds where the record has one, else the displacement between fixes over their interval. A stop is
a stretch of at least `STOP_MIN` seconds at or below `STOP_SPEED`; a gap is an interval between fixes longer than
`GAP` seconds, said to begin moving or still by the speed of the fix before it.
"""
import math
import statistics

STOP_SPEED = 1.0          # m/s: at rest (GPS jitter reads below it)
MOVING_SPEED = 2.0        # m/s: the engines' movement speed
STOP_MIN = 5.0            # s: a stop shorter than this is a slow-down
GAP = 30.0                # s: no fix for this long
BEFORE = 600.0            # s: how far back "the walk and wait before the ride" looks
STAY = 50.0               # m: within this of where a ride begins is waiting there
FIELDS = ["duration_s", "distance_m", "fix_interval_p50_s", "speed_p50", "speed_p85", "speed_p95", "speed_max2",
          "share_moving", "time_ge_8_s", "time_ge_12_s", "time_ge_25_s", "time_ge_42_s", "stops_per_km",
          "stop_p50_s", "stop_share_8_45", "stops_8_45_per_km", "accel_p95", "decel_p95", "heading_change_per_km",
          "gaps", "gaps_moving", "gaps_still", "longest_gap_s", "longest_gap_moving_s", "walk_before_m",
          "wait_before_s", "steps_moving", "steps_per_min", "activity_reports", "share_automotive",
          "share_automotive_high", "share_walking", "share_cycling", "share_stationary",
          # Around the ride (the AROUND seconds before and after it): the activity stream's walking and stillness,
          # the steps, how soon walking follows the stop, and the first automotive report after the start.
          "walk_reports_before", "still_reports_before", "last_walk_before_s", "steps_before",
          "walk_reports_after", "still_reports_after", "first_walk_after_s", "steps_after", "walk_after_m",
          "first_automotive_after_start_s", "from_previous_trip_m", "since_previous_trip_s",
          # The fixes' reported accuracy (hacc): its median while moving, the share of moving fixes coarser than
          # COARSE metres (a phone under ground reports network positions), and its median in the BEFORE seconds.
          "hacc_p50_moving", "share_coarse_moving", "hacc_p50_before"]
AROUND = 600.0            # s: how far before and after a ride "around it" looks
COARSE = 25.0             # m: a fix less accurate than this is not a clear sky's GPS


def haversine(lat1, lon1, lat2, lon2):
    r = 6_371_000.0
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(min(1.0, math.sqrt(a)))


def bearing(lat1, lon1, lat2, lon2):
    p1, p2, dl = math.radians(lat1), math.radians(lat2), math.radians(lon2 - lon1)
    y = math.sin(dl) * math.cos(p2)
    x = math.cos(p1) * math.sin(p2) - math.sin(p1) * math.cos(p2) * math.cos(dl)
    return math.degrees(math.atan2(y, x)) % 360


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    index = (len(ordered) - 1) * q
    low, high = math.floor(index), math.ceil(index)
    return ordered[low] + (ordered[high] - ordered[low]) * (index - low)


def fixes_of(records):
    """The location records as (t, lat, lon, speed or None, hacc), in time order, fixes of invalid accuracy out."""
    fixes = []
    for r in records:
        if r.get("kind") != "location":
            continue
        hacc = r.get("hacc", 0)
        if hacc is not None and hacc < 0:
            continue
        speed = r.get("speed")
        fixes.append((r["t"], r["lat"], r["lon"], speed if speed is not None and speed >= 0 else None, hacc))
    fixes.sort(key=lambda f: f[0])
    return fixes


def speeds(fixes):
    """Each fix's speed: its GPS speed, else the displacement from the fix before over the interval."""
    result = []
    for i, (t, lat, lon, speed, _) in enumerate(fixes):
        if speed is None and i > 0:
            t0, lat0, lon0 = fixes[i - 1][:3]
            speed = haversine(lat0, lon0, lat, lon) / (t - t0) if t > t0 else 0.0
        result.append(speed if speed is not None else 0.0)
    return result


def features(records, start, end, previous_end=None):
    """The features of the window [start, end] of one device's records (every record of the device: what comes
    before the window gives the walk and wait before it). `previous_end`: when the device's trip before it ended,
    if any (how far from there, and how long after, this one begins: a driver comes back to the car)."""
    window = [r for r in records if start <= r["t"] <= end]
    fixes = fixes_of(window)
    out = dict.fromkeys(FIELDS)
    out["duration_s"] = end - start
    if len(fixes) >= 2:
        v = speeds(fixes)
        intervals = [b[0] - a[0] for a, b in zip(fixes, fixes[1:])]
        out["fix_interval_p50_s"] = statistics.median(intervals)
        distance = sum(haversine(a[1], a[2], b[1], b[2]) for a, b, s in zip(fixes, fixes[1:], v[1:]) if s >= MOVING_SPEED)
        out["distance_m"] = distance
        moving = [s for s in v if s >= MOVING_SPEED]
        out["speed_p50"] = percentile(moving, 0.5)
        out["speed_p85"] = percentile(moving, 0.85)
        out["speed_p95"] = percentile(moving, 0.95)
        out["speed_max2"] = max((min(a, b) for a, b in zip(v, v[1:])), default=None)
        out["share_moving"] = len(moving) / len(v)
        for threshold in (8, 12, 25, 42):
            out[f"time_ge_{threshold}_s"] = sum(dt for dt, s in zip(intervals, v[1:]) if s >= threshold and dt <= GAP)
        # Stops: stretches at rest between moving stretches.
        stops, rest_since, moved = [], None, False
        for (t, *_), s in zip(fixes, v):
            if s <= STOP_SPEED:
                if rest_since is None and moved:
                    rest_since = t
            else:
                if rest_since is not None and s >= MOVING_SPEED:
                    if t - rest_since >= STOP_MIN:
                        stops.append(t - rest_since)
                    rest_since = None
                if s >= MOVING_SPEED:
                    moved = True
        km = max(distance / 1000, 0.1)
        out["stops_per_km"] = len(stops) / km
        out["stop_p50_s"] = statistics.median(stops) if stops else None
        dwell = [d for d in stops if 8 <= d <= 45]
        out["stop_share_8_45"] = len(dwell) / len(stops) if stops else None
        out["stops_8_45_per_km"] = len(dwell) / km
        accelerations = [(b - a) / dt for a, b, dt in zip(v, v[1:], intervals) if 0 < dt <= 15]
        out["accel_p95"] = percentile([a for a in accelerations if a > 0], 0.95)
        out["decel_p95"] = percentile([-a for a in accelerations if a < 0], 0.95)
        turns, last_heading = 0.0, None
        for a, b, s in zip(fixes, fixes[1:], v[1:]):
            if s < MOVING_SPEED or haversine(a[1], a[2], b[1], b[2]) < 10:
                continue
            heading = bearing(a[1], a[2], b[1], b[2])
            if last_heading is not None:
                turns += abs((heading - last_heading + 180) % 360 - 180)
            last_heading = heading
        out["heading_change_per_km"] = turns / km
        gaps = [(dt, s) for dt, s in zip(intervals, v[:-1]) if dt > GAP]
        out["gaps"] = len(gaps)
        out["gaps_moving"] = sum(1 for _, s in gaps if s >= MOVING_SPEED)
        out["gaps_still"] = sum(1 for _, s in gaps if s < MOVING_SPEED)
        out["longest_gap_s"] = max((dt for dt, _ in gaps), default=0.0)
        out["longest_gap_moving_s"] = max((dt for dt, s in gaps if s >= MOVING_SPEED), default=0.0)
        accuracies = [f[4] for f, s in zip(fixes, v) if s >= MOVING_SPEED and f[4]]
        if accuracies:
            out["hacc_p50_moving"] = statistics.median(accuracies)
            out["share_coarse_moving"] = sum(a > COARSE for a in accuracies) / len(accuracies)
    # The walk and wait before: how long the device had stayed within STAY metres of where the window begins, and
    # how far it came from in the BEFORE seconds before that.
    before = fixes_of([r for r in records if start - BEFORE <= r["t"] < start])
    anchor = fixes[0] if fixes else (before[-1] if before else None)
    if any(f[4] for f in before):
        out["hacc_p50_before"] = statistics.median(f[4] for f in before if f[4])
    if before and anchor:
        near = lambda fix: haversine(fix[1], fix[2], anchor[1], anchor[2]) <= STAY
        index = len(before)
        while index > 0 and near(before[index - 1]):
            index -= 1
        stay_began = before[index][0] if index < len(before) else start
        out["wait_before_s"] = start - stay_began
        out["walk_before_m"] = haversine(before[0][1], before[0][2], anchor[1], anchor[2])
    # Steps while the vehicle moved, and the pedometer's pace.
    steps = [(r["t"], r["steps"]) for r in window if r.get("kind") == "steps"]
    if len(steps) >= 2 and len(fixes) >= 2:
        v = speeds(fixes)
        moving_at = lambda t: next((s for (ft, *_), s in zip(reversed(fixes), reversed(v)) if ft <= t), 0.0)
        counted = sum(max(0, b - a) for (ta, a), (tb, b) in zip(steps, steps[1:]) if moving_at(tb) >= 5)
        out["steps_moving"] = counted
        out["steps_per_min"] = sum(max(0, b - a) for (_, a), (_, b) in zip(steps, steps[1:])) / max((end - start) / 60, 1)
    activities = [(r["activity"], r["confidence"]) for r in window if r.get("kind") == "activity"]
    out["activity_reports"] = len(activities)
    if activities:
        n = len(activities)
        out["share_automotive"] = sum(a == "automotive" for a, _ in activities) / n
        out["share_automotive_high"] = sum(a == "automotive" and c == "high" for a, c in activities) / n
        out["share_walking"] = sum(a in ("walking", "running") for a, _ in activities) / n
        out["share_cycling"] = sum(a == "cycling" for a, _ in activities) / n
        out["share_stationary"] = sum(a == "stationary" for a, _ in activities) / n
    around(records, start, end, out)
    if previous_end is not None and previous_end <= start:
        ended = fixes_of([r for r in records if previous_end - GAP <= r["t"] <= previous_end])
        began = fixes_of([r for r in records if start <= r["t"] <= start + GAP])
        if ended and began:
            out["from_previous_trip_m"] = haversine(ended[-1][1], ended[-1][2], began[0][1], began[0][2])
        out["since_previous_trip_s"] = start - previous_end
    return out


def around(records, start, end, out):
    """What the device reported in the AROUND seconds before and after the window: walking and stillness, steps, the
    walk after it, how long after the stop walking was first reported, and when automotive was first reported after
    the start (the classifier's latency)."""
    def reports(t0, t1, kinds):
        return sum(1 for r in records if r.get("kind") == "activity" and t0 <= r["t"] < t1 and r["activity"] in kinds)
    def steps_in(t0, t1):
        counts = [r["steps"] for r in records if r.get("kind") == "steps" and t0 <= r["t"] <= t1]
        return max(counts) - min(counts) if len(counts) >= 2 else None
    walking = ("walking", "running")
    out["walk_reports_before"] = reports(start - AROUND, start, walking)
    out["still_reports_before"] = reports(start - AROUND, start, ("stationary",))
    last_walk = max((r["t"] for r in records if r.get("kind") == "activity" and start - AROUND <= r["t"] < start
                     and r["activity"] in walking), default=None)
    out["last_walk_before_s"] = None if last_walk is None else start - last_walk
    out["steps_before"] = steps_in(start - AROUND, start)
    out["walk_reports_after"] = reports(end, end + AROUND, walking)
    out["still_reports_after"] = reports(end, end + AROUND, ("stationary",))
    first_walk = min((r["t"] for r in records if r.get("kind") == "activity" and end <= r["t"] < end + AROUND
                      and r["activity"] in walking), default=None)
    out["first_walk_after_s"] = None if first_walk is None else first_walk - end
    out["steps_after"] = steps_in(end, end + AROUND)
    after = fixes_of([r for r in records if end <= r["t"] <= end + AROUND])
    out["walk_after_m"] = haversine(after[0][1], after[0][2], after[-1][1], after[-1][2]) if len(after) >= 2 else None
    first_auto = min((r["t"] for r in records if r.get("kind") == "activity" and start - 60 <= r["t"] <= end
                      and r["activity"] == "automotive" and r.get("confidence") == "high"), default=None)
    out["first_automotive_after_start_s"] = None if first_auto is None else first_auto - start


def row(values):
    """The features as CSV cells (blank where a feature says nothing)."""
    return ["" if values[f] is None else (f"{values[f]:.3f}" if isinstance(values[f], float) else values[f]) for f in FIELDS]
