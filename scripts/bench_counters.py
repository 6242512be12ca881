#!/usr/bin/env python3
"""The work counters of `make bench` and the count guards of `make test` (docs/benchmarks.md, Counters): heap
allocations and system calls a record, a batch or an event on each hot path. They do not move with the machine's
load, so a change of a few per cent in the work shows where timings on a shared machine cannot.

  python3 scripts/bench_counters.py [--bin .build/release] [--records out/fleet.ndjson] [--json FILE]
                                    [--only inprocess|services] [--check] [--batches 100,1000]

How they are counted:
  - allocations: scripts/alloc-counter/alloc_counter.c, built here with gcc into the build directory and preloaded
    (LD_PRELOAD; never linked into the product). In-process paths read it around their region
    (`roadsave-bench counts`, the calling thread's count); the services and `roadsave send` are read from outside,
    through the counter file each process maps (ROADSAVE_ALLOC_COUNTER_FILE), before and after a flood.
  - system calls: in-process paths under `strace -f` (no privileges: it traces its own child), counting the
    measuring thread's calls between the markers `roadsave-bench counts` makes around each region; the services and
    `roadsave send` with `perf stat -e raw_syscalls:sys_enter` (root here; "unavailable" where perf cannot).
  - bytes written: in-process paths, what the measuring thread's writes (`write`, `pwrite64`, ...) returned under
    strace: the journal's pages, each a 64 KiB page of its log and, when the log folds, of its file.

Paths (in-process, exact, timing-independent; what --check guards against scripts/counters-recorded.json):
  replay from MessagePack and NDJSON (reading, decoding, ordering, engines, events encoded), the engines alone,
  the codecs (a gateway batch decoded, MessagePack and JSON; encoded), sensor-ingest's batch (validation, the
  journal's append on a temporary journal, the acknowledgement) for batches of 100 and 1,000 records, detection's
  feed reply (the shell's decoding and the core's apply of a reply as ingest serves it), and a checkpoint of every
  device after the batches of 100 (`checkpoint-device`: its "records" are devices, each state's JSON row compressed).
Paths measured from outside, under load (timing-dependent: batches and replies form as the load goes; --check
  runs none of them): each service through `roadsave up --keys` fed by `roadsave send` with batches of 100 and
  of 1,000 records (ingest a gateway batch and a record, detection a feed reply and a record, the notifier an event
  delivered live, by catch-up and by webhook), and `roadsave send` itself.

--check (make test, on the debug build): runs the in-process paths on a small fleet it simulates itself and fails,
naming the path, when one allocates, calls the system or writes more than its recorded value plus the margin.
"""
import argparse
import glob
import http.server
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import load_average  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM_SOURCE = os.path.join(ROOT, "scripts", "alloc-counter", "alloc_counter.c")
RECORDED = os.path.join(ROOT, "scripts", "counters-recorded.json")
# The fleet of the guards: small enough for seconds in a debug build, with trips, a crash and several devices.
CHECK_FLEET = ["--devices", "12", "--duration", "20", "--seed", "7", "--crashes", "1"]


# MARK: Tools

def build_shim(directory):
    """The allocation counter, compiled into `directory` (once per source change); None without gcc."""
    compiler = shutil.which("gcc") or shutil.which("cc") or shutil.which("clang")
    if compiler is None:
        return None
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, "alloc_counter.so")
    if not os.path.exists(target) or os.path.getmtime(target) < os.path.getmtime(SHIM_SOURCE):
        subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", target + ".part", SHIM_SOURCE], check=True)
        os.rename(target + ".part", target)
    return target


def perf_works():
    """Whether `perf stat` can count the raw_syscalls tracepoint here (root, or a permissive perf_event_paranoid)."""
    if shutil.which("perf") is None:
        return False
    try:
        result = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and "raw_syscalls" in result.stderr and "not supported" not in result.stderr


def strace_works():
    if shutil.which("strace") is None:
        return False
    try:
        return subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "true"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def read_counter_file(path):
    """(allocations, frees, bytes, reallocations) of a process's counter file; None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(64)
    except OSError:
        return None
    if len(data) < 64:
        return None
    return struct.unpack("<8Q", data)[:4]


class PerfCount:
    """`perf stat -e raw_syscalls:sys_enter` attached to a running process until `stop()`: its system calls."""

    def __init__(self, pid, directory, name):
        self.output = os.path.join(directory, "perf-%s-%d.txt" % (name, pid))
        self.process = subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p", str(pid),
                                         "-o", self.output], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return None
        return perf_value(self.output)


def perf_value(path):
    try:
        with open(path) as handle:
            for line in handle:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2] == "raw_syscalls:sys_enter":
                    return 0 if fields[0].startswith("<not") else int(fields[0])
    except OSError:
        pass
    return None


# MARK: In-process paths

MARK = re.compile(r'^(\d+)\s+.*"roadsave-counts:(begin|end):([^"]+)"')
CALL = re.compile(r"^(\d+)\s+([a-z_0-9]+)\(")
# The calls that write to a file or socket, and what each returned: the bytes it wrote.
WRITES = {"write", "pwrite64", "writev", "pwritev", "pwritev2"}
RETURNED = re.compile(r"\)\s+=\s+(\d+)\s*$")
# A call another thread's call interrupted in the log: "<unfinished ...>", then "<... pwrite64 resumed>...) = n".
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. ([a-z_0-9]+) resumed>")


def strace_regions(log):
    """System calls of the marking thread between each region's markers, and the bytes its writes wrote, summed over
    the region's measurements: {path: {"calls": n, "byName": {call: n}, "written": bytes}}."""
    regions = {}
    open_regions = {}
    with open(log, errors="replace") as handle:
        for line in handle:
            mark = MARK.match(line)
            if mark:
                tid, edge, name = int(mark.group(1)), mark.group(2), mark.group(3)
                if edge == "begin":
                    open_regions[tid] = (name, {}, [0])
                elif tid in open_regions:
                    region, counts, written = open_regions.pop(tid)
                    total = regions.setdefault(region, {"calls": 0, "byName": {}, "written": 0})
                    total["calls"] += sum(counts.values())
                    total["written"] += written[0]
                    for call, count in counts.items():
                        total["byName"][call] = total["byName"].get(call, 0) + count
                continue
            resumed = RESUMED.match(line)
            if resumed:
                # Counted where it began; what it wrote is said here.
                returned = RETURNED.search(line) if resumed.group(2) in WRITES else None
                if returned and int(resumed.group(1)) in open_regions:
                    open_regions[int(resumed.group(1))][2][0] += int(returned.group(1))
                continue
            call = CALL.match(line)
            if call and int(call.group(1)) in open_regions:
                _, counts, written = open_regions[int(call.group(1))]
                counts[call.group(2)] = counts.get(call.group(2), 0) + 1
                returned = RETURNED.search(line) if call.group(2) in WRITES else None
                if returned:
                    written[0] += int(returned.group(1))
    return regions


def inprocess(binaries, shim, records, work, syscalls=True):
    """`roadsave-bench counts` over `records` with the counter preloaded (and under strace when `syscalls`): its
    regions, each with allocations and, when traced, system calls."""
    output = os.path.join(work, "counts.json")
    command = [os.path.join(binaries, "roadsave-bench"), "counts", records, "--json", output]
    log = os.path.join(work, "strace.log")
    traced = syscalls and strace_works()
    if traced:
        command = ["strace", "-f", "-qq", "-o", log, "-e", "trace=all", "-s", "80"] + command
    environment = dict(os.environ, LD_PRELOAD=shim)
    result = subprocess.run(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError("roadsave-bench counts failed (%d): %s" % (result.returncode, result.stderr[-3000:]))
    with open(output) as handle:
        regions = json.load(handle)
    calls = strace_regions(log) if traced else {}
    for region in regions:
        traced_region = calls.get(region["path"])
        region["syscalls"] = traced_region["calls"] if traced_region else None
        region["syscallNames"] = traced_region["byName"] if traced_region else None
        region["written"] = traced_region["written"] if traced_region else None
    return regions, traced


def print_inprocess(regions, traced):
    print("in-process paths (exact; allocations by the counter, system calls by strace%s):"
          % ("" if traced else ": unavailable here"))
    print("  %-34s %9s %8s %12s %12s %12s %12s" % ("path", "records", "batches", "allocs/rec", "allocs/batch",
                                                  "calls/batch", "calls/rec"))
    for region in regions:
        records, batches = region["records"], region["batches"]
        calls = region.get("syscalls")
        print("  %-34s %9d %8d %12.3f %12.1f %12s %12s" % (
            region["path"], records, batches, region["allocations"] / max(1, records),
            region["allocations"] / max(1, batches),
            "%.2f" % (calls / max(1, batches)) if calls is not None else "-",
            "%.4f" % (calls / max(1, records)) if calls is not None else "-"))
        if calls:
            names = sorted(region["syscallNames"].items(), key=lambda item: -item[1])
            print("  %-34s %s" % ("", ", ".join("%s %d" % item for item in names[:8])))
        if region.get("written"):
            print("  %-34s written: %.0f bytes a batch, %.0f a record" % (
                "", region["written"] / max(1, batches), region["written"] / max(1, records)))


def bounds(recorded, expected):
    """The most allocations a record, system calls a batch and bytes written a batch a path may make: its recorded
    values plus the margins (relative, then absolute), so that an allocation or a system call more a record, or a
    page more a commit, fails while the small drift of a dependency's update does not."""
    margin = recorded["margins"]
    allocations = expected["allocationsPerRecord"] * (1 + margin["allocationsRelative"]) + margin["allocationsPerRecord"]
    calls = None
    if expected.get("syscallsPerBatch") is not None:
        calls = expected["syscallsPerBatch"] * (1 + margin["syscallsRelative"]) + margin["syscallsPerBatch"]
    written = None
    if expected.get("writtenPerBatch") is not None:
        written = expected["writtenPerBatch"] * (1 + margin["writtenRelative"])
    return allocations, calls, written


def check(regions, traced, configuration):
    """The guards: each path's allocations a record and system calls a batch against the recorded values plus their
    margins. Returns the failures, each naming its path."""
    with open(RECORDED) as handle:
        recorded = json.load(handle)
    table = recorded.get(configuration, {})
    if not table:
        return ["no recorded values for the %s build in %s" % (configuration, os.path.relpath(RECORDED, ROOT))]
    failures = []
    seen = {region["path"]: region for region in regions}
    for path, expected in table.items():
        region = seen.get(path)
        if region is None or region["allocations"] is None:
            failures.append("%s: not measured" % path)
            continue
        records, batches = max(1, region["records"]), max(1, region["batches"])
        allocations = region["allocations"] / records
        most_allocations, most_calls, most_written = bounds(recorded, expected)
        if allocations > most_allocations:
            failures.append("%s: %.3f heap allocations a record, recorded %.3f (at most %.3f with the margins)"
                            % (path, allocations, expected["allocationsPerRecord"], most_allocations))
        if traced and most_calls is not None and region.get("syscalls") is not None:
            calls = region["syscalls"] / batches
            if calls > most_calls:
                failures.append("%s: %.2f system calls a batch, recorded %.2f (at most %.2f with the margins): %s"
                                % (path, calls, expected["syscallsPerBatch"], most_calls,
                                   ", ".join("%s %d" % item for item in sorted(region["syscallNames"].items()))))
        if traced and most_written is not None and region.get("written") is not None:
            written = region["written"] / batches
            if written > most_written:
                failures.append("%s: %.0f bytes written a batch, recorded %.0f (at most %.0f with the margin)"
                                % (path, written, expected["writtenPerBatch"], most_written))
    return failures


def record(regions, traced, configuration):
    """Writes the measured values as the recorded ones of this build configuration (after an intended change: review
    the difference before committing it)."""
    with open(RECORDED) as handle:
        recorded = json.load(handle)
    table = {}
    for region in regions:
        records, batches = max(1, region["records"]), max(1, region["batches"])
        entry = {"allocationsPerRecord": round(region["allocations"] / records, 3),
                 "allocationsPerBatch": round(region["allocations"] / batches, 1)}
        if traced and region.get("syscalls") is not None:
            entry["syscallsPerBatch"] = round(region["syscalls"] / batches, 2)
        if traced and region.get("written"):
            entry["writtenPerBatch"] = round(region["written"] / batches)
        table[region["path"]] = entry
    recorded[configuration] = table
    write_recorded(recorded)


def write_recorded(recorded):
    """The recorded values, a path a line, so that a change reads as the lines of the paths it moved."""
    lines = ["{"]
    keys = list(recorded)
    for number, key in enumerate(keys):
        comma = "," if number + 1 < len(keys) else ""
        value = recorded[key]
        if key in ("debug", "release"):
            paths = list(value)
            lines.append(" %s: {" % json.dumps(key))
            for index, path in enumerate(paths):
                lines.append("  %s: %s%s" % (json.dumps(path), json.dumps(value[path]),
                                             "," if index + 1 < len(paths) else ""))
            lines.append(" }" + comma)
        else:
            lines.append(" %s: %s%s" % (json.dumps(key), json.dumps(value), comma))
    lines.append("}")
    with open(RECORDED, "w") as handle:
        handle.write("\n".join(lines) + "\n")


# MARK: Services, from outside

class WebhookReceiver(http.server.ThreadingHTTPServer):
    """Answers every POST with 204 and counts them."""
    daemon_threads = True

    def __init__(self):
        self.posts = 0
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                receiver.posts += 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d/hook" % self.server_address[1]


def scrape(port, names):
    """The values of the metrics `names` (summed over their labels) from /metrics on `port`."""
    values = {name: 0.0 for name in names}
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return {name: None for name in names}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        for name in names:
            if line.startswith(name + " ") or line.startswith(name + "{"):
                values[name] += float(line.rsplit(" ", 1)[1])
    return values


def services(binaries, shim, msgpack_file, records, events, batch, work, use_perf, webhooks, catch_up,
             checkpoints=True):
    """One flood of `records` (in batches of `batch`) through `roadsave up --keys` with every process's allocations
    counted (and system calls, with perf), until the notifier has stored the `events` replay gives for them and the
    subscriber has them; then optionally every event read again by catch-up. The figures of each service for that
    flood."""
    import bench_services  # the same `roadsave up` harness as the services benchmark
    name = "%d%s" % (batch, "" if checkpoints else "-nocheckpoints")
    counters_dir = os.path.join(work, "counters-" + name)
    os.makedirs(counters_dir, exist_ok=True)
    environment = {"LD_PRELOAD": shim, "ROADSAVE_ALLOC_COUNTER_FILE": os.path.join(counters_dir, "%p.counts")}
    if not checkpoints:
        # Detection's checkpoints come every 2 s whatever the load: held off, what remains is its work on records.
        environment["ROADSAVE_CHECKPOINT_INTERVAL"] = "3600"
    receiver = WebhookReceiver() if webhooks else None
    extra = ["--webhooks", receiver.url] if receiver else []
    if receiver:
        environment["ROADSAVE_WEBHOOK_SECRET"] = "bench-counters-secret"
    os.makedirs(os.path.join(work, "up-" + name), exist_ok=True)
    up = bench_services.Up(binaries, os.path.join(work, "up-" + name), True, metrics=True,
                           environment=environment, extra=extra)
    result = {"batch": batch, "records": records, "checkpoints": checkpoints, "webhooks": bool(webhooks)}
    try:
        subscriber = bench_services.Subscriber(up.endpoint["publish"], up.subscriber)
        subscriber.start()
        time.sleep(1.0)
        pids = dict(up.pids)
        port = up.metrics_port
        metric_names = {"detect": ["roadsave_detection_feed_replies_total", "roadsave_detection_records_read_total"],
                        "notify": ["roadsave_notifier_events_stored_total", "roadsave_notifier_feed_replies_total",
                                   "roadsave_notifier_webhook_deliveries_total"],
                        "ingest": ["roadsave_ingest_batches_total", "roadsave_ingest_journal_commits_total"]}
        ports = {"ingest": port, "detect": port + 1, "notify": port + 2}
        # What each service allocates idle (timers, heartbeats, held feed requests, metrics), a second.
        idle_start = {name: read_counter_file(os.path.join(counters_dir, "%d.counts" % pid)) for name, pid in pids.items()}
        time.sleep(2.0)
        before_metrics = {name: scrape(ports[name], metric_names[name]) for name in ports}
        before = {name: read_counter_file(os.path.join(counters_dir, "%d.counts" % pid)) for name, pid in pids.items()}
        result["idlePerSecond"] = {name: (before[name][0] - idle_start[name][0]) / 2.0
                                   for name in pids if before.get(name) and idle_start.get(name)}
        perfs = {name: PerfCount(pid, counters_dir, name) for name, pid in pids.items()} if use_perf else {}
        # roadsave send, counted as a whole process (its own counter file and perf around it).
        send_counts = os.path.join(counters_dir, "send.counts")
        send = [os.path.join(binaries, "roadsave"), "send", msgpack_file, "--endpoint", up.endpoint["gateway"],
                "--batch", str(batch), "--window", "16", "--no-progress"] + up.gateway.send_flags()
        send_perf = os.path.join(counters_dir, "perf-send.txt")
        if use_perf:
            send = ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", send_perf, "--"] + send
        started = time.monotonic()
        completed = subprocess.run(send, env=dict(os.environ, LD_PRELOAD=shim, ROADSAVE_ALLOC_COUNTER_FILE=send_counts),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if completed.returncode != 0:
            raise RuntimeError("roadsave send failed: %s" % completed.stderr[-2000:])
        send_seconds = time.monotonic() - started
        wait = up.wait_end_to_end(subscriber)
        result["floodSeconds"] = time.monotonic() - started
        # Every event of the file stored (the last devices' are decided when the stream's end is read, which the
        # positions compared above may not show yet), then the subscriber's share of them.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            stored = scrape(ports["notify"], ["roadsave_notifier_events_stored_total"])["roadsave_notifier_events_stored_total"]
            if stored is not None and stored - (before_metrics["notify"]["roadsave_notifier_events_stored_total"] or 0) >= events:
                break
            time.sleep(0.1)
        while subscriber.events < events and time.monotonic() < deadline:
            time.sleep(0.1)
        while receiver and receiver.posts < events and time.monotonic() < deadline:
            time.sleep(0.1)
        after = {name: read_counter_file(os.path.join(counters_dir, "%d.counts" % pid)) for name, pid in pids.items()}
        calls = {name: perf.stop() for name, perf in perfs.items()}
        after_metrics = {name: scrape(ports[name], metric_names[name]) for name in ports}
        result["sendSeconds"] = send_seconds
        result["endToEndWait"] = wait
        result["eventsLive"] = subscriber.events
        delta_metrics = {name: {metric: (after_metrics[name][metric] or 0) - (before_metrics[name][metric] or 0)
                                for metric in metric_names[name]} for name in ports}
        result["metrics"] = delta_metrics
        for name in pids:
            if before.get(name) and after.get(name):
                result[name] = {"allocations": after[name][0] - before[name][0], "bytes": after[name][2] - before[name][2],
                                "syscalls": calls.get(name)}
            else:
                result[name] = {"allocations": None, "bytes": None, "syscalls": calls.get(name)}
        sent = read_counter_file(send_counts)
        result["send"] = {"allocations": sent[0] if sent else None, "syscalls": perf_value(send_perf) if use_perf else None,
                          "batches": -(-records // batch)}
        if receiver:
            result["webhookPosts"] = receiver.posts
        if catch_up:
            events = int(delta_metrics["notify"]["roadsave_notifier_events_stored_total"])
            notify_counts = os.path.join(counters_dir, "%d.counts" % pids["notify"])
            first = read_counter_file(notify_counts)
            perf = PerfCount(pids["notify"], counters_dir, "notify-catchup") if use_perf else None
            tail = [os.path.join(binaries, "roadsave"), "tail", "--endpoint", up.endpoint["publish"],
                    "--catch-up-endpoint", up.endpoint["catchup"], "--since", "0", "--via-catch-up",
                    "--count", str(events), "--timeout", "120"] + up.subscriber.send_flags()
            taken = subprocess.run(tail, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            last = read_counter_file(notify_counts)
            result["catchUp"] = {"events": len(taken.stdout.splitlines()),
                                 "allocations": last[0] - first[0] if first and last else None,
                                 "syscalls": perf.stop() if perf else None}
        subscriber.stop()
    finally:
        up.stop()
        if receiver:
            receiver.shutdown()
    return result


def print_services(runs, use_perf):
    print("services under load (roadsave up --keys fed by roadsave send; allocations by the counter, system calls %s):"
          % ("by perf stat" if use_perf else "unavailable: perf cannot count raw_syscalls here"))

    def per(value, count):
        return "%.2f" % (value / count) if value is not None and count else "-"

    for run in runs:
        batches = run["send"]["batches"]
        records = run["records"]
        replies = run["metrics"]["detect"]["roadsave_detection_feed_replies_total"]
        events = run["metrics"]["notify"]["roadsave_notifier_events_stored_total"]
        notes = ([] if run.get("checkpoints", True) else ["detection's checkpoints held off"]) + (
            ["a webhook"] if run.get("webhooks") else [])
        print("  batches of %d records%s (%d records, %d batches, %d detection feed replies, %d events; send %.1f s,"
              " until the subscriber had all %.1f s)"
              % (run["batch"], " with " + " and ".join(notes) if notes else "", records, batches, replies or 0,
                 events or 0, run["sendSeconds"], run.get("floodSeconds", float("nan"))))
        ingest, detect, notify, send = run["ingest"], run["detect"], run["notify"], run["send"]
        idle = run.get("idlePerSecond", {})
        print("    ingest     allocations %s a record, %s a batch; system calls %s a batch, %s a record"
              % (per(ingest["allocations"], records), per(ingest["allocations"], batches),
                 per(ingest["syscalls"], batches), per(ingest["syscalls"], records)))
        print("    detection  allocations %s a record, %s a feed reply; system calls %s a feed reply, %s a record"
              % (per(detect["allocations"], records), per(detect["allocations"], replies),
                 per(detect["syscalls"], replies), per(detect["syscalls"], records)))
        print("    notifier   allocations %s an event (stored, delivered live%s), of which idle work %.0f a second;"
              " system calls %s an event"
              % (per(notify["allocations"], events), " and by webhook" if run.get("webhooks") else "",
                 idle.get("notify", float("nan")), per(notify["syscalls"], events)))
        if "catchUp" in run:
            catch = run["catchUp"]
            print("    notifier   by catch-up: allocations %s an event, system calls %s an event (%d events read)"
                  % (per(catch["allocations"], catch["events"]), per(catch["syscalls"], catch["events"]),
                     catch["events"]))
        print("    send       allocations %s a record, %s a batch; system calls %s a batch"
              % (per(send["allocations"], records), per(send["allocations"], batches), per(send["syscalls"], batches)))
        print("    idle       allocations a second: %s" % ", ".join(
            "%s %.0f" % (name, value) for name, value in sorted(idle.items())))


def service_figures(runs):
    figures = []

    def add(name, value, unit):
        figures.append({"figure": name, "value": None if value is None else round(value, 3), "unit": unit,
                        "baseline": None, "baselineValue": None, "target": None})

    def per(value, count):
        return value / count if value is not None and count else None

    for run in runs:
        b, records, batches = run["batch"], run["records"], run["send"]["batches"]
        if not run.get("checkpoints", True):
            b = "%d, checkpoints held off, a webhook" % b
        replies = run["metrics"]["detect"]["roadsave_detection_feed_replies_total"]
        events = run["metrics"]["notify"]["roadsave_notifier_events_stored_total"]
        add("counters ingest allocations a record (batches of %s)" % b, per(run["ingest"]["allocations"], records),
            "allocations")
        add("counters ingest system calls a batch (batches of %s)" % b, per(run["ingest"]["syscalls"], batches), "calls")
        add("counters detection allocations a record (batches of %s)" % b, per(run["detect"]["allocations"], records),
            "allocations")
        add("counters detection system calls a feed reply (batches of %s)" % b, per(run["detect"]["syscalls"], replies),
            "calls")
        add("counters detection system calls a record (batches of %s)" % b, per(run["detect"]["syscalls"], records),
            "calls")
        add("counters notifier allocations an event live (batches of %s)" % b, per(run["notify"]["allocations"], events),
            "allocations")
        add("counters send allocations a record (batches of %s)" % b, per(run["send"]["allocations"], records),
            "allocations")
        add("counters send system calls a batch (batches of %s)" % b, per(run["send"]["syscalls"], batches), "calls")
        if "catchUp" in run:
            catch = run["catchUp"]
            add("counters notifier allocations an event by catch-up", per(catch["allocations"], catch["events"]),
                "allocations")

    return figures


def to_msgpack(ndjson, target):
    """The records of an NDJSON file as concatenated MessagePack maps (what `roadsave send` sends as they are); their
    number."""
    import msgpack
    packer = msgpack.Packer(use_bin_type=True)
    count = 0
    with open(ndjson, "rb") as source, open(target, "wb") as out:
        for line in source:
            if line.strip():
                out.write(packer.pack(json.loads(line)))
                count += 1
    return count


# MARK: Main

def build_configuration(binaries):
    return "release" if os.path.basename(os.path.normpath(binaries)) == "release" else "debug"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--records", default=os.path.join(ROOT, "out", "fleet.ndjson"),
                        help="NDJSON records (make bench: the issue's fleet, roadsave simulate --devices 200 "
                             "--duration 20 --seed 7); --check simulates its own small fleet")
    parser.add_argument("--only", choices=["inprocess", "services"])
    parser.add_argument("--batches", default="100,1000", help="gateway batch sizes of the services' floods")
    parser.add_argument("--json", help="write the figures (make bench's format) to this file")
    parser.add_argument("--raw", help="write everything measured to this file")
    parser.add_argument("--check", action="store_true",
                        help="the guards of make test: the in-process paths against scripts/counters-recorded.json")
    parser.add_argument("--record", action="store_true",
                        help="measure the in-process paths as --check does and write them as the recorded values of "
                             "this build (debug or release) in scripts/counters-recorded.json")
    options = parser.parse_args()
    binaries = os.path.abspath(options.bin)
    configuration = build_configuration(binaries)
    shim = build_shim(os.path.join(os.path.dirname(binaries), "alloc-counter"))
    if shim is None:
        message = "bench_counters: no C compiler (gcc, cc or clang): the allocation counter cannot be built"
        if options.check:
            print(message + "; the count guards are skipped", file=sys.stderr)
            return 0
        print(message, file=sys.stderr)
        return 1
    work = tempfile.mkdtemp(prefix="roadsave-counters-")
    figures, raw = [], {"configuration": configuration, "load": [load_average()]}
    try:
        if options.check or options.record or options.only in (None, "inprocess"):
            records = options.records
            if options.check or options.record:
                records = os.path.join(work, "check-fleet.ndjson")
                subprocess.run([os.path.join(binaries, "roadsave"), "simulate", *CHECK_FLEET, "--output", records],
                               check=True, stdout=subprocess.DEVNULL)
            regions, traced = inprocess(binaries, shim, records, work)
            raw["inprocess"] = regions
            raw["traced"] = traced
            print_inprocess(regions, traced)
            if options.record:
                if not traced:
                    print("bench_counters: strace cannot run here; not recording without system calls", file=sys.stderr)
                    return 1
                record(regions, traced, configuration)
                print("recorded the %s build's counts in %s" % (configuration, os.path.relpath(RECORDED, ROOT)))
                return 0
            if options.check:
                if options.raw:
                    with open(options.raw, "w") as handle:
                        json.dump(raw, handle, indent=1)
                if not traced:
                    print("bench_counters: strace cannot run here: system calls are not guarded (install Debian's "
                          "strace)", file=sys.stderr)
                failures = check(regions, traced, configuration)
                if failures:
                    print("count guards FAILED (%s build; recorded values and margins in %s):"
                          % (configuration, os.path.relpath(RECORDED, ROOT)), file=sys.stderr)
                    for failure in failures:
                        print("  " + failure, file=sys.stderr)
                    return 1
                print("count guards: %d paths within their recorded values (%s build)" % (len(regions), configuration))
                return 0
            for region in regions:
                records_count, batches = max(1, region["records"]), max(1, region["batches"])
                figures.append({"figure": "counters %s allocations a record" % region["path"],
                                "value": round(region["allocations"] / records_count, 3), "unit": "allocations",
                                "baseline": None, "baselineValue": None, "target": region.get("target")})
                if region.get("syscalls") is not None:
                    figures.append({"figure": "counters %s system calls a batch" % region["path"],
                                    "value": round(region["syscalls"] / batches, 2), "unit": "calls",
                                    "baseline": None, "baselineValue": None, "target": None})
        if options.only in (None, "services"):
            msgpack_file = os.path.join(work, "records.msgpack")
            count = to_msgpack(options.records, msgpack_file)
            replayed = subprocess.run([os.path.join(binaries, "roadsave"), "replay", options.records, "--quiet",
                                       "--no-progress"], stdout=subprocess.PIPE, check=True)
            events = len(replayed.stdout.splitlines())
            use_perf = perf_works()
            runs = []
            batches = [int(b) for b in options.batches.split(",")]
            for index, batch in enumerate(batches):
                runs.append(services(binaries, shim, msgpack_file, count, events, batch, work, use_perf,
                                     webhooks=False, catch_up=index == 0))
            # The notifier with a webhook, and detection with its checkpoints held off.
            runs.append(services(binaries, shim, msgpack_file, count, events, batches[-1], work, use_perf,
                                 webhooks=True, catch_up=False, checkpoints=False))
            raw["services"] = runs
            print_services(runs, use_perf)
            figures += service_figures(runs)
        raw["load"].append(load_average())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(figures, handle, indent=1)
    if options.raw:
        with open(options.raw, "w") as handle:
            json.dump(raw, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
