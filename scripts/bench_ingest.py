#!/usr/bin/env python3
"""sensor-ingest alone against the bare acknowledging server: CPU microseconds a record of each, fed the same flood by
the same `roadsave send` (plaintext, batches as the sender makes them, nobody reading ingest's journal), in
alternating rounds; with --compare, a second build's ingest in each round too (before and after a change).

  python3 scripts/bench_ingest.py [--bin .build/release] [--compare DIR] [--rounds 5] [--records 1000000]
                                  [--devices 2000] [--json FILE]

What it isolates: the services benchmark (bench_services.py) measures ingest beside detection, the notifier and
CurveZMQ on two shared cores; here ingest's own work a record (reading, validating, admitting, storing durably,
acknowledging) is set against the ack-server's (receiving, reading, validating, acknowledging), one process at a
time. Figures, not assertions: it prints each round and the medians (--json: ingest's median with the ack-server's as
its baseline, make bench's format; `make bench` runs it with 3 rounds). The flood is generated once and kept in
$TMPDIR/roadsave-bench-cache (as bench_services.py keeps its own).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import bench_services
from benchkit import cpu_seconds, free_base_port, wait_listening

APPLICATION = "demo-app"  # the flood's application (bench_services.generate)


def measure(server, binaries, sender, flood, records, scratch):
    """CPU microseconds a record of `server` ("ack" or "ingest" from `binaries`) while `sender` sends `flood`."""
    port = free_base_port()
    gateway = "tcp://127.0.0.1:%d" % port
    directory = tempfile.mkdtemp(dir=scratch)
    if server == "ack":
        command = [os.path.join(binaries, "roadsave-bench"), "ack-server", gateway]
    else:
        command = [os.path.join(binaries, "roadsave"), "ingest", "--gateway-endpoint", gateway,
                   "--records-endpoint", "tcp://127.0.0.1:%d" % (port + 1), "--data-dir", directory,
                   "--applications", APPLICATION, "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening([gateway])
        before = cpu_seconds(process.pid)
        subprocess.run([sender, "send", flood, "--endpoint", gateway, "--log-level", "warning"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return (cpu_seconds(process.pid) - before) / records * 1e6
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.path.join(bench_services.ROOT, ".build", "release"),
                        help="the build measured: its roadsave (ingest, send) and roadsave-bench (ack-server)")
    parser.add_argument("--compare", help="another build whose ingest runs in every round too (e.g. before a change)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--devices", type=int, default=2000)
    parser.add_argument("--json", help="write the figures (make bench's format) to this file")
    options = parser.parse_args()
    for name in ["roadsave", "roadsave-bench"]:
        if not os.access(os.path.join(options.bin, name), os.X_OK):
            sys.exit("bench_ingest: no %s in %s (swift build -c release)" % (name, options.bin))
    if options.compare and not os.access(os.path.join(options.compare, "roadsave"), os.X_OK):
        sys.exit("bench_ingest: no roadsave in %s" % options.compare)
    flood, records = bench_services.input_file(options, "main", 0, max(1, options.records // options.devices))
    sender = os.path.join(options.bin, "roadsave")
    runs = [("ack-server", "ack", options.bin), ("ingest", "ingest", options.bin)]
    if options.compare:
        runs.append(("ingest (compare)", "ingest", options.compare))
    figures = {name: [] for name, _, _ in runs}
    scratch = tempfile.mkdtemp(prefix="roadsave-bench-ingest-")
    try:
        for round_number in range(options.rounds):
            # The ingests' order alternates, so that neither always follows the other.
            order = runs if round_number % 2 == 0 else [runs[0]] + runs[:0:-1]
            for name, server, binaries in order:
                figures[name].append(measure(server, binaries, sender, flood, records, scratch))
            print("round %d: %s" % (round_number + 1, ", ".join(
                "%s %.2f µs" % (name, figures[name][-1]) for name, _, _ in runs)), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    bare = statistics.median(figures["ack-server"])
    print("CPU a record, median of %d rounds (range):" % options.rounds)
    for name, _, _ in runs:
        values = figures[name]
        median = statistics.median(values)
        ratio = "" if name == "ack-server" else ", %.2f× the ack-server" % (median / bare)
        print("  %-17s %.2f µs (%.2f–%.2f)%s" % (name, median, min(values), max(values), ratio))
    if options.json:
        figures_out = [{
            "figure": "ingest alone: CPU a record (median of %d rounds)" % options.rounds,
            "value": statistics.median(figures["ingest"]), "unit": "µs/record",
            "baseline": "the ack-server alone, the same client and flood, alternating",
            "baselineValue": bare, "target": "ratio <= 1.5",
        }]
        with open(options.json, "w") as out:
            json.dump(figures_out, out, indent=1)


if __name__ == "__main__":
    main()
