#!/usr/bin/env python3
"""End-to-end test of `roadsave report`: the page in a real browser, the GeoJSON against RFC 7946.

Makes two known recordings with `roadsave simulate` (fixed seeds):
  fleet  eight devices, two of them crashing, 45 minutes (`--devices 8 --crashes 2 --seed 1`): several trips, two
         crashes, dismissed candidates (potholes, drops), devices that never drive;
  day    one device's morning: a commute over potholes (07:10, `--scenario pothole`), then a drive that ends in a
         crash (07:55, `--scenario crash`), both `--seed 1`: two trips of one device, a crash, dismissals.
For each it takes the events `roadsave replay` prints (and the dismissals it logs) as the truth, runs `roadsave report
... --output ... --geojson ...`, and checks:
  - the page in headless Chromium (Debian's chromium and chromium-driver, selenium from PyPI): no console messages of
    level SEVERE, nothing fetched, no script; one `.trip-track` per trip and one `.crash-marker` per crash with a
    position, with the same trip and crash IDs as replay's events; one `.dismissed-tick` per dismissal replay logged;
    every track drawn (a rendered length), every map and timeline laid out;
  - the GeoJSON with the `geojson` package's `is_valid` and by hand (RFC 7946): a FeatureCollection of Features,
    geometry types LineString or Point (or null), positions [longitude, latitude] within range and near the simulated
    city (which catches swapped axes), LineStrings of two positions or more, trip properties equal to replay's
    tripDidEnd events, crash properties to its crashDetected events, follow-up properties to its crashFollowUp events;
  - the same figures with --events (replay's events as the source), the same page from the MessagePack recording,
    the bad-input matrix (exit 2 naming the file, line and field), and a user named like markup (shown as text,
    nothing of it run or loaded).
`--screenshot FILE` also saves a picture of the day's page (docs/report.png, shown in the README and
docs/replay-and-reports.md). Runs as root too (CI): Chromium gets --no-sandbox.

Usage: scripts/test_report.py --roadsave .build/debug/roadsave [--keep DIR] [--screenshot docs/report.png]
"""
import argparse, collections, json, os, re, shutil, subprocess, sys, tempfile

# The simulator's default origin (Cape Town); every simulated position lies within a few km of it.
ORIGIN_LAT, ORIGIN_LON = -33.9249, 18.4241

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"  FAIL {message}", file=sys.stderr)
    return condition


def run(args, expect=0):
    result = subprocess.run(args, capture_output=True, text=True)
    if expect is not None and result.returncode != expect:
        raise SystemExit(f"{' '.join(args)}: exit {result.returncode}, expected {expect}\n{result.stderr}")
    return result


def make_recordings(roadsave, work):
    fleet = os.path.join(work, "fleet.ndjson")
    run([roadsave, "simulate", "--devices", "8", "--crashes", "2", "--seed", "1", "--duration", "45", "--output", fleet])
    run([roadsave, "simulate", "--devices", "8", "--crashes", "2", "--seed", "1", "--duration", "45",
         "--output", os.path.join(work, "fleet.msgpack")])
    day = os.path.join(work, "day.ndjson")
    morning = os.path.join(work, "day-morning.ndjson")
    crash = os.path.join(work, "day-crash.ndjson")
    run([roadsave, "simulate", "--devices", "1", "--scenario", "pothole", "--seed", "1",
         "--start", "2026-03-02T07:10:00Z", "--duration", "35", "--output", morning])
    run([roadsave, "simulate", "--devices", "1", "--scenario", "crash", "--seed", "1",
         "--start", "2026-03-02T07:55:00Z", "--duration", "25", "--output", crash])
    with open(day, "w") as out:
        for part in (morning, crash):
            with open(part) as f:
                shutil.copyfileobj(f, out)
    return {"fleet": fleet, "day": day}


def truth(roadsave, records, work):
    """Replay's events (by kind) and the number of dismissals it logged."""
    name = os.path.splitext(os.path.basename(records))[0]
    result = run([roadsave, "replay", records])
    events_path = os.path.join(work, f"{name}-events.ndjson")
    with open(events_path, "w") as f:
        f.write(result.stdout)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    trips = {}
    for event in events:
        if event["event"] in ("tripDidStart", "tripDidEnd"):
            key = (event["app"], event["user"], event["tripID"])
            if event["event"] == "tripDidEnd" or key not in trips:
                trips[key] = event
    crashes = [e for e in events if e["event"] == "crashDetected"]
    follow_ups = {e["crashID"]: e for e in events if e["event"] == "crashFollowUp"}
    behaviours = {(e["app"], e["user"], e["tripID"]): e for e in events if e["event"] == "tripBehaviour"}
    dismissed = len(re.findall(r'msg="suspected crash dismissed"', result.stderr))
    return {"events_path": events_path, "trips": trips, "crashes": crashes, "follow_ups": follow_ups,
            "behaviours": behaviours, "dismissed": dismissed}


def report(roadsave, records, work, name, *extra):
    html = os.path.join(work, f"{name}.html")
    geojson = os.path.join(work, f"{name}.geojson")
    run([roadsave, "report", records, "--output", html, "--geojson", geojson] + list(extra))
    return html, geojson


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars",
                 "--window-size=1040,900", "--force-device-scale-factor=1"):
        options.add_argument(flag)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(driver_path), options=options)


def check_page(driver, html, expected, label):
    from selenium.webdriver.common.by import By

    driver.get("file://" + os.path.abspath(html))
    check(driver.execute_script("return document.readyState") == "complete", f"{label}: page did not load")
    logs = driver.get_log("browser")
    for entry in logs:
        print(f"  console {entry['level']}: {entry['message']}", file=sys.stderr)
    check(not [e for e in logs if e["level"] == "SEVERE"], f"{label}: console errors")
    check(driver.execute_script("return document.scripts.length") == 0, f"{label}: the page holds a script")
    check(driver.execute_script("return performance.getEntriesByType('resource').length") == 0,
          f"{label}: the page fetched something")

    tracks = driver.find_elements(By.CSS_SELECTOR, "svg.map polyline.trip-track")
    track_ids = collections.Counter(t.get_attribute("data-trip-id") for t in tracks)
    want_trips = collections.Counter(key[2] for key in expected["trips"])
    check(len(tracks) == len(expected["trips"]), f"{label}: {len(tracks)} trip tracks, replay has {len(expected['trips'])} trips")
    check(track_ids == want_trips, f"{label}: trip IDs on the map differ from replay's")
    spans = driver.find_elements(By.CSS_SELECTOR, "svg.timeline rect.trip-span")
    check(len(spans) == len(expected["trips"]), f"{label}: {len(spans)} trip spans on the timelines")

    positioned = [c for c in expected["crashes"] if c.get("latitude") is not None]
    markers = driver.find_elements(By.CSS_SELECTOR, "svg.map g.crash-marker")
    check(len(markers) == len(positioned), f"{label}: {len(markers)} crash markers, replay has {len(positioned)} crashes with a position")
    check(sorted(m.get_attribute("data-crash-id") for m in markers) == sorted(c["crashID"] for c in positioned),
          f"{label}: crash IDs on the map differ from replay's")
    check(sorted(m.get_attribute("data-confidence") for m in markers) == sorted(c["confidence"] for c in positioned),
          f"{label}: crash confidences differ")
    ticks = driver.find_elements(By.CSS_SELECTOR, "svg.timeline path.crash-tick")
    check(len(ticks) == len(expected["crashes"]), f"{label}: {len(ticks)} crash marks on the timelines")
    # Each crash's row marks its follow-up, with the outcome replay gave it.
    cells = {row.get_attribute("data-crash-id"): row.find_element(By.CSS_SELECTOR, "td.follow-up").get_attribute("data-outcome")
             for row in driver.find_elements(By.CSS_SELECTOR, "table.crashes tbody tr")}
    want_outcomes = {c["crashID"]: expected["follow_ups"][c["crashID"]]["outcome"] if c["crashID"] in expected["follow_ups"] else None
                     for c in expected["crashes"]}
    check(cells == want_outcomes, f"{label}: follow-up outcomes in the crashes table {cells}, replay gave {want_outcomes}")
    # Each trip's driving: one diamond per driving event, and the score (or the reason there is none) in its row.
    want_events = sum(len(b["events"]) for b in expected["behaviours"].values())
    diamonds = driver.find_elements(By.CSS_SELECTOR, "svg.map path.driving-event")
    check(len(diamonds) == want_events, f"{label}: {len(diamonds)} driving-event markers, replay gave {want_events} events")
    driving = {row.get_attribute("data-trip-id"): row.find_element(By.CSS_SELECTOR, "td.driving")
               for row in driver.find_elements(By.CSS_SELECTOR, "table.trips tbody tr")}
    for (_, _, trip_id), behaviour in expected["behaviours"].items():
        cell = driving.get(trip_id)
        if cell is None:
            continue  # the user's trips are in another device's table: looked for there
        if behaviour["scored"]:
            check(cell.get_attribute("data-score") == f"{behaviour['score']:.0f}",
                  f"{label}: trip {trip_id} score {cell.get_attribute('data-score')}, replay gave {behaviour['score']}")
        else:
            check(cell.get_attribute("data-unscored") == behaviour["unscoredReason"],
                  f"{label}: trip {trip_id} unscored {cell.get_attribute('data-unscored')}, replay gave {behaviour['unscoredReason']}")
    dismissed = driver.find_elements(By.CSS_SELECTOR, "svg.timeline path.dismissed-tick")
    check(len(dismissed) == expected["dismissed"],
          f"{label}: {len(dismissed)} dismissed marks, replay logged {expected['dismissed']} dismissals")
    check(len(driver.find_elements(By.CSS_SELECTOR, "svg.map g.dismissed-marker")) <= expected["dismissed"],
          f"{label}: more dismissed markers than dismissals")

    # Drawn, not just present: every trip with positions has a length on screen, every SVG a size.
    lengths = driver.execute_script(
        "return Array.from(document.querySelectorAll('polyline.trip-track')).map(p => p.points.numberOfItems > 1 ? p.getTotalLength() : 0)")
    check(all(length > 0 for length in lengths), f"{label}: a trip track has no length: {lengths}")
    for svg in driver.find_elements(By.CSS_SELECTOR, "svg.map, svg.timeline"):
        size = svg.size
        check(size["width"] > 400 and size["height"] > 100, f"{label}: an SVG is not laid out: {size}")
    return len(tracks), len(markers)


def position_ok(position, label):
    if not (isinstance(position, list) and len(position) == 2 and all(isinstance(x, (int, float)) for x in position)):
        return check(False, f"{label}: position {position!r} is not [lon, lat]")
    lon, lat = position
    return (check(-180 <= lon <= 180 and -90 <= lat <= 90, f"{label}: position {position} out of range")
            and check(abs(lon - ORIGIN_LON) < 0.5 and abs(lat - ORIGIN_LAT) < 0.5,
                      f"{label}: position {position} is not near the simulated city (axes swapped?)"))


def check_geojson(path, expected, label):
    import geojson

    with open(path) as f:
        text = f.read()
    data = json.loads(text)
    parsed = geojson.loads(text)
    check(parsed.is_valid, f"{label}: geojson says invalid: {parsed.errors()}")
    check(data.get("type") == "FeatureCollection", f"{label}: not a FeatureCollection")
    check(set(data) <= {"type", "features", "bbox"}, f"{label}: foreign members on the collection: {set(data)}")
    lines, crash_points, follow_up_points, driving_points = {}, {}, {}, collections.Counter()
    for index, feature in enumerate(data["features"]):
        where = f"{label}: feature {index}"
        check(feature.get("type") == "Feature", f"{where}: type {feature.get('type')}")
        check(set(feature) == {"type", "geometry", "properties"}, f"{where}: members {set(feature)}")
        geometry, properties = feature["geometry"], feature["properties"]
        check(isinstance(properties, dict), f"{where}: properties not an object")
        if geometry is not None:
            check(geometry.get("type") in ("LineString", "Point"), f"{where}: geometry type {geometry.get('type')}")
            check(set(geometry) == {"type", "coordinates"}, f"{where}: geometry members {set(geometry)}")
            if geometry["type"] == "LineString":
                check(len(geometry["coordinates"]) >= 2, f"{where}: a LineString of {len(geometry['coordinates'])} positions")
                for position in geometry["coordinates"]:
                    if not position_ok(position, where):
                        break
            elif geometry["type"] == "Point":
                position_ok(geometry["coordinates"], where)
        if properties.get("event") in ("tripDidStart", "tripDidEnd"):
            check(geometry is None or geometry["type"] == "LineString", f"{where}: a trip that is not a LineString")
            lines[(properties["app"], properties["user"], properties["tripID"])] = properties
        elif properties.get("event") == "crashDetected":
            check(geometry is None or geometry["type"] == "Point", f"{where}: a crash that is not a Point")
            crash_points[properties["crashID"]] = (properties, geometry)
        elif properties.get("event") == "crashFollowUp":
            check(geometry is None or geometry["type"] == "Point", f"{where}: a follow-up that is not a Point")
            follow_up_points[properties["crashID"]] = properties
        elif properties.get("kind") == "drivingEvent":
            check(geometry is not None and geometry["type"] == "Point", f"{where}: a driving event that is not a Point")
            driving_points[(properties["app"], properties["user"], properties["tripID"])] += 1
        else:
            check(properties.get("kind") == "dismissedCrash",
                  f"{where}: neither a trip, a crash, a driving event nor a dismissal")
    check(lines == expected["trips"], f"{label}: trip features' properties differ from replay's trip events")
    check(len(crash_points) == len(expected["crashes"]), f"{label}: {len(crash_points)} crash points")
    for crash in expected["crashes"]:
        properties, geometry = crash_points.get(crash["crashID"], (None, None))
        check(properties == crash, f"{label}: crash {crash['crashID']} properties differ from replay's event")
        if crash.get("latitude") is not None and geometry:
            check(geometry["coordinates"] == [crash["longitude"], crash["latitude"]],
                  f"{label}: crash {crash['crashID']} at {geometry['coordinates']}, replay says lon {crash['longitude']}, lat {crash['latitude']}")
    want_points = collections.Counter({key: len(b["events"]) for key, b in expected["behaviours"].items() if b["events"]})
    check(driving_points == want_points, f"{label}: driving-event points {dict(driving_points)}, replay gave {dict(want_points)}")
    check(follow_up_points == expected["follow_ups"], f"{label}: follow-up features' properties differ from replay's crashFollowUp events")
    return len(data["features"])


def check_bad_input(roadsave, records, events, work):
    out = os.path.join(work, "bad.html")
    cases = []
    cases.append(("a missing records file", [os.path.join(work, "missing.ndjson")], ["missing.ndjson", "No such file"]))
    bad_records = os.path.join(work, "bad-records.ndjson")
    with open(records) as f, open(bad_records, "w") as out_file:
        for number, line in enumerate(f, 1):
            if number == 50:
                record = json.loads(line)
                record["t"] = "yesterday"
                line = json.dumps(record) + "\n"
            out_file.write(line)
            if number == 100:
                break
    cases.append(("an unreadable record", [bad_records], ["bad-records.ndjson line 50", "t:"]))
    bad_events = os.path.join(work, "bad-events.ndjson")
    with open(events) as f:
        lines = f.read().splitlines()
    crash_line = next(i for i, line in enumerate(lines) if '"crashDetected"' in line)
    lines[crash_line] = lines[crash_line].replace('"confidence":"', '"confidence":"very-')
    with open(bad_events, "w") as f:
        f.write("\n".join(lines) + "\n")
    cases.append(("a bad events file", [records, "--events", bad_events],
                  [f"bad-events.ndjson line {crash_line + 1}", "confidence:"]))
    cases.append(("a missing events file", [records, "--events", os.path.join(work, "nope.ndjson")], ["nope.ndjson"]))
    for name, args, needles in cases:
        result = run([roadsave, "report"] + args + ["--output", out], expect=None)
        check(result.returncode == 2, f"{name}: exit {result.returncode}, expected 2")
        for needle in needles:
            check(needle in result.stderr, f"{name}: the message does not say {needle!r}: {result.stderr.strip()}")
    check(not os.path.exists(out), "a failed report left a page behind")
    help_text = run([roadsave, "report", "--help"]).stdout
    check("--geojson" in help_text and "--events" in help_text, "report --help lacks its options")
    check("report" in run([roadsave, "--help"]).stdout, "roadsave --help does not list report")


def check_hostile_names(roadsave, driver, work):
    """Device IDs come from outside: a user named like markup is shown as text, and nothing of it runs or loads."""
    from selenium.webdriver.common.by import By

    records = os.path.join(work, "hostile.ndjson")
    prefix = "<img src=x onerror=alert(1)><script>alert(2)</script>'\"&"
    run([roadsave, "simulate", "--devices", "1", "--scenario", "crash", "--seed", "1", "--duration", "15",
         "--user-prefix", prefix, "--output", records])
    html, _ = report(roadsave, records, work, "hostile")
    driver.get("file://" + os.path.abspath(html))
    logs = driver.get_log("browser")
    check(not [e for e in logs if e["level"] == "SEVERE"], f"hostile names: console errors {logs}")
    counts = driver.execute_script("return [document.scripts.length, document.images.length]")
    check(counts == [0, 0], f"hostile names: {counts[0]} scripts and {counts[1]} images in the page")
    heading = driver.find_element(By.CSS_SELECTOR, "section.device h2").text
    check(heading.endswith("/" + prefix + "001"), f"hostile names: the heading reads {heading!r}")


def screenshot(driver, html, path):
    """The whole page (the day has one device: its map, timeline and tables), as the README and docs show it."""
    from selenium.webdriver.common.by import By

    driver.get("file://" + os.path.abspath(html))
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1040, min(height + 40, 4000))
    page = driver.find_element(By.TAG_NAME, "html")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    check(page.screenshot(path), f"screenshot {path} failed")
    print(f"report: wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roadsave", required=True, help="the roadsave executable")
    parser.add_argument("--keep", help="write the recordings, pages and GeoJSON here and keep them")
    parser.add_argument("--screenshot", help="also save a PNG of the day's report here (docs/report.png)")
    args = parser.parse_args()
    roadsave = os.path.abspath(args.roadsave)
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="roadsave-report-")
    os.makedirs(work, exist_ok=True)
    driver = None
    try:
        recordings = make_recordings(roadsave, work)
        driver = browser()
        for name, records in recordings.items():
            expected = truth(roadsave, records, work)
            check(len(expected["trips"]) >= 2 and expected["crashes"] and expected["dismissed"] >= 1,
                  f"{name}: the known recording no longer has 2 trips, a crash and a dismissal")
            html, geojson = report(roadsave, records, work, name)
            tracks, markers = check_page(driver, html, expected, name)
            features = check_geojson(geojson, expected, name)
            print(f"report {name}: {tracks} trip tracks, {markers} crash markers, {expected['dismissed']} dismissed, "
                  f"{features} GeoJSON features; page {os.path.getsize(html)} bytes, GeoJSON {os.path.getsize(geojson)} "
                  f"bytes, records {os.path.getsize(records)} bytes")
            # Trips and crashes from an events file: the same page, as the events are replay's.
            html_events, geojson_events = report(roadsave, records, work, f"{name}-from-events", "--events",
                                                 expected["events_path"])
            check_page(driver, html_events, expected, f"{name} --events")
            check_geojson(geojson_events, expected, f"{name} --events")
            if name == "fleet":
                msgpack_html, msgpack_geojson = report(roadsave, os.path.join(work, "fleet.msgpack"), work, "fleet-msgpack")
                with open(html) as a, open(msgpack_html) as b:
                    # The same devices drawn the same (the header names the records file).
                    ndjson_page, msgpack_page = a.read(), b.read()
                    check(ndjson_page[ndjson_page.index("<section"):] == msgpack_page[msgpack_page.index("<section"):],
                          "fleet: the page from MessagePack differs from the page from NDJSON")
                with open(geojson) as a, open(msgpack_geojson) as b:
                    check(a.read() == b.read(), "fleet: the GeoJSON from MessagePack differs")
                check_bad_input(roadsave, records, expected["events_path"], work)
                check_hostile_names(roadsave, driver, work)
            if name == "day" and args.screenshot:
                screenshot(driver, html, args.screenshot)
    finally:
        if driver is not None:
            driver.quit()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print(f"report: {len(FAILURES)} checks failed", file=sys.stderr)
        return 1
    print("report: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
