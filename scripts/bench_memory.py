#!/usr/bin/env python3
"""Detection's memory with many known, mostly idle devices (issue 9, target 5): resident memory of the detection
service while it reads a simulated fleet of N idle devices (each announces itself once: a capabilities record and a
parked fix, spread evenly over the run) and M active devices (the simulator's mix of drives, walks, parked phones),
with devices leaving memory after --idle seconds (`--device-memory-idle`) and, as the baseline, without.

  python3 scripts/bench_memory.py [--bin .build/release] [--devices 1000000] [--active 20000] [--minutes 2]
                                  [--idle 5] [--rate 40000] [--baseline-devices 100000] [--json FILE]

Steps: `roadsave simulate --idle-devices N --devices M --duration MIN` writes the fleet; sensor-ingest and detection
run on loopback with their journal and store; `roadsave send` sends the file at --rate records a second (default: as
fast as acknowledged); detection's VmRSS is sampled every 0.2 s until it has read the whole journal and then for
--settle seconds (two eviction rounds), giving the peak and the settled figure.

DETECT_LOG=debug in the environment gives detection's log a line per checkpoint (devices in memory, changed, leaving;
encoding and writing seconds), in the temporary directory kept with --keep.

Time is compressed: the run lasts minutes, so the idle time is seconds (default 5) instead of the service's default
hour. What the figure stands for: devices quiet for the idle time are out of memory, so detection holds the active
devices plus those heard from within the idle time. Without eviction every device ever heard from stays; the baseline
is run on --baseline-devices idle devices (a full million would need several GiB) and extrapolated linearly per device,
which the output says.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from benchkit import detection_applied, free_ports, memory, query, wait_listening

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1024 * 1024






class Sampler(threading.Thread):
    """Samples a process's VmRSS every `interval` seconds."""

    def __init__(self, pid, interval=0.2):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples = []
        self.running = True

    def run(self):
        while self.running:
            rss = memory(self.pid).get("VmRSS")
            if rss is None:
                return
            self.samples.append((time.monotonic(), rss))
            time.sleep(self.interval)


def run_fleet(options, fleet, idle_seconds, directory, label):
    """ingest + detection over `fleet`: detection's peak and settled RSS, and its store's device counts."""
    ports = free_ports(4)
    endpoint = {name: "tcp://127.0.0.1:%d" % port for name, port in zip(["gateway", "records", "control", "events"], ports)}
    environment = dict(os.environ, ROADSAVE_APPLICATIONS="demo-app", ROADSAVE_LOG_LEVEL="warning")
    logs = {}

    def start(name, arguments, extra_environment=None):
        log = open(os.path.join(directory, "%s-%s.log" % (label, name)), "w")
        logs[name] = log.name
        return subprocess.Popen([os.path.join(options.bin, "roadsave-" + name)] + arguments
                                + ["--data-dir", os.path.join(directory, label, name)],
                                stdout=log, stderr=log, env=dict(environment, **(extra_environment or {})))

    # Ingest admits every device of the fleet (its default is at most 100,000 per application).
    ingest = start("ingest", ["--gateway-endpoint", endpoint["gateway"], "--records-endpoint", endpoint["records"],
                              "--max-devices-per-app", str(2 * (options.devices + options.active))])
    detect = start("detect", ["--records-endpoint", endpoint["records"], "--control-endpoint", endpoint["control"],
                              "--events-endpoint", endpoint["events"], "--checkpoint-interval", str(options.checkpoint),
                              "--device-memory-idle", str(idle_seconds)], {"ROADSAVE_LOG_LEVEL": os.environ.get("DETECT_LOG", "info")})
    wait_listening([endpoint["gateway"], endpoint["records"], endpoint["control"]])
    sampler = Sampler(detect.pid)
    sampler.start()
    started = time.monotonic()
    send = [os.path.join(options.bin, "roadsave"), "send", "--endpoint", endpoint["gateway"], "--batch", "1000"]
    if options.rate:
        send += ["--rate", str(options.rate)]
    with open(os.path.join(directory, "%s-send.log" % label), "w") as log:
        result = subprocess.run(send + [fleet], stdout=log, stderr=log)
    if result.returncode != 0:
        raise SystemExit("roadsave send failed (status %d): see %s" % (result.returncode, log.name))
    sent = time.monotonic() - started
    journal = os.path.join(directory, label, "ingest", "journal.sqlite")
    store = os.path.join(directory, label, "detect", "detection.sqlite")
    head = query(journal, "SELECT max(position) FROM chunks")
    while time.monotonic() - started < options.timeout:
        if head is not None and detection_applied(store) >= head:
            break
        time.sleep(0.2)
    caught_up = time.monotonic() - started
    # Settled: after the idle time and a few checkpoints, devices quiet since have left.
    time.sleep(options.settle)
    sampler.running = False
    sampler.join()
    final = memory(detect.pid)
    settled = final.get("VmRSS", 0)
    peak = max([final.get("VmHWM", 0)] + [rss for _, rss in sampler.samples])
    for process in (detect, ingest):
        process.send_signal(signal.SIGTERM)
    for process in (detect, ingest):
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
    devices = query(store, "SELECT count(*) FROM devices") or 0
    evicted = query(store, "SELECT count(*) FROM devices WHERE resident = 0") or 0
    return {"label": label, "idle": idle_seconds, "peak": peak, "settled": settled, "sent": sent,
            "caughtUp": caught_up, "devices": devices, "evicted": evicted, "records": head}


def simulate(options, idle_devices, path):
    started = time.monotonic()
    subprocess.run([os.path.join(options.bin, "roadsave"), "simulate", "--idle-devices", str(idle_devices),
                    "--devices", str(options.active), "--duration", str(options.minutes), "--seed", "42",
                    "--output", path], check=True)
    with open(path, "rb") as handle:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    return lines, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description="detection's memory with many idle devices, with and without eviction")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--devices", type=int, default=1_000_000, help="idle devices (default 1000000)")
    parser.add_argument("--active", type=int, default=20_000, help="active devices (default 20000)")
    parser.add_argument("--minutes", type=float, default=2, help="simulated minutes (default 2)")
    parser.add_argument("--idle", type=float, default=5, help="--device-memory-idle of the run with eviction (s)")
    parser.add_argument("--checkpoint", type=float, default=2, help="--checkpoint-interval (s, default 2)")
    parser.add_argument("--baseline-devices", type=int, default=100_000,
                        help="idle devices of the run without eviction (0: skip it; default 100000)")
    parser.add_argument("--rate", type=float, default=40_000,
                        help="records a second sent, so that devices arrive over minutes as in a live fleet (default 40000; 0: as fast as acknowledged)")
    # 15 s could end inside the last large checkpoint (a million devices leaving over the run), before its states went.
    parser.add_argument("--settle", type=float, default=40, help="seconds measured after catching up (default 40)")
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--json", help="write the figures as JSON to this file")
    options = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="roadsave-bench-memory-")
    try:
        fleet = os.path.join(directory, "fleet.ndjson")
        lines, seconds = simulate(options, options.devices, fleet)
        print("fleet: %d idle + %d active devices, %d records over %g simulated minutes (simulated in %.0f s)"
              % (options.devices, options.active, lines, options.minutes, seconds), flush=True)
        evicting = run_fleet(options, fleet, options.idle, directory, "evicting")
        os.remove(fleet)
        print("with eviction (idle %g s): peak %.0f MiB, settled %.0f MiB; %d devices known, %d out of memory; "
              "sent in %.0f s, detection caught up after %.0f s"
              % (options.idle, evicting["peak"] / MiB, evicting["settled"] / MiB, evicting["devices"],
                 evicting["evicted"], evicting["sent"], evicting["caughtUp"]), flush=True)

        baseline = None
        if options.baseline_devices > 0:
            baseline_fleet = os.path.join(directory, "baseline.ndjson")
            simulate(options, options.baseline_devices, baseline_fleet)
            baseline = run_fleet(options, baseline_fleet, 0, directory, "baseline")
            os.remove(baseline_fleet)
            # Linear in the devices held: the baseline's figures scaled to the evicting run's fleet (1 when the same).
            scale = (options.devices + options.active) / float(options.baseline_devices + options.active)
            per_device = baseline["settled"] / max(1, baseline["devices"])
            extrapolated = baseline["settled"] * scale
            baseline["perDevice"] = per_device
            baseline["extrapolated"] = extrapolated
            baseline["peakExtrapolated"] = baseline["peak"] * scale
            print("without eviction: %d idle + %d active devices: peak %.0f MiB, settled %.0f MiB (%.1f KiB a device "
                  "known); %d + %d devices would need about %.0f MiB (linear extrapolation)"
                  % (options.baseline_devices, options.active, baseline["peak"] / MiB, baseline["settled"] / MiB,
                     per_device / 1024, options.devices, options.active, extrapolated / MiB), flush=True)

        shape = "%d known devices (%d active), idle %g s" % (options.devices + options.active, options.active, options.idle)
        known = options.baseline_devices + options.active
        scaled = "" if options.baseline_devices == options.devices else " (measured with %d devices, scaled linearly)" % known
        figures = [
            {"figure": "detection memory peak, " + shape, "value": round(evicting["peak"] / MiB, 1), "unit": "MiB",
             "baseline": "without eviction" + scaled if baseline else None,
             "baselineValue": round(baseline["peakExtrapolated"] / MiB, 1) if baseline else None, "target": "<= 1024"},
            {"figure": "detection memory settled, " + shape, "value": round(evicting["settled"] / MiB, 1), "unit": "MiB",
             "baseline": "without eviction" + scaled if baseline else None,
             "baselineValue": round(baseline["extrapolated"] / MiB, 1) if baseline else None, "target": "<= 1024"},
        ]
        if options.json:
            with open(options.json, "w") as handle:
                json.dump(figures, handle, indent=2)
                handle.write("\n")
        print(json.dumps({"evicting": evicting, "baseline": baseline}))
    finally:
        if options.keep:
            print("kept", directory)
        else:
            subprocess.run(["rm", "-rf", directory])


if __name__ == "__main__":
    sys.exit(main())
