#!/usr/bin/env python3
"""sensor-ingest alone against the bare acknowledging server: CPU microseconds a record of each, fed the same flood by
the same `roadsave send` (plaintext, batches as the sender makes them, nobody reading ingest's journal), in
alternating rounds; with --compare, a second build's ingest in each round too (before and after a change).

  python3 scripts/bench_ingest.py [--bin .build/release] [--compare DIR] [--rounds 5] [--records 1000000]
                                  [--devices 2000] [--prefill N] [--json FILE]

What it isolates: the services benchmark (bench_services.py) measures ingest beside detection, the notifier and
CurveZMQ on two shared cores; here ingest's own work a record (reading, validating, admitting, storing durably,
acknowledging) is set against the ack-server's (receiving, reading, validating, acknowledging), one process at a
time. Figures, not assertions: it prints each round and the medians (--json: ingest's median with the ack-server's as
its baseline, make bench's format; `make bench` runs it with 3 rounds). The flood is generated once and kept in
$TMPDIR/roadsave-bench-cache (as bench_services.py keeps its own). Beside the CPU, the bytes each ingest wrote to
its disk a record (the journal's log and file, from /proc/PID/io): what a journal's pages cost, which CPU time on a
shared machine hides. `--prefill N` sends the flood N times before the measured one, so that the journal is measured
as a running service's is, holding millions of records, rather than new.
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


def written_bytes(pid):
    """Bytes the process has caused to be written to storage (its journal's log and file); None where the kernel
    keeps no such count (no task I/O accounting)."""
    try:
        with open("/proc/%d/io" % pid) as handle:
            return next((int(line.split(":")[1]) for line in handle if line.startswith("write_bytes:")), None)
    except OSError:
        return None


def amount(value):
    """A figure that may be unknown, as printed."""
    return "-" if value is None else "%.0f" % value


def measure(server, binaries, sender, flood, records, scratch, prefill=0):
    """CPU microseconds and bytes written a record of `server` ("ack" or "ingest" from `binaries`) while `sender`
    sends `flood`, after `prefill` floods sent to an ingest unmeasured."""
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
        send = [sender, "send", flood, "--endpoint", gateway, "--log-level", "warning"]
        for _ in range(prefill if server == "ingest" else 0):
            subprocess.run(send, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        before, written = cpu_seconds(process.pid), written_bytes(process.pid)
        subprocess.run(send, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        written_after = written_bytes(process.pid)
        return ((cpu_seconds(process.pid) - before) / records * 1e6,
                None if written is None or written_after is None else (written_after - written) / records)
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
    parser.add_argument("--prefill", type=int, default=0,
                        help="floods sent to each ingest before the measured one (a journal holding millions of "
                             "records, as a running service's does)")
    parser.add_argument("--json", help="write the figures (make bench's format) to this file")
    options = parser.parse_args()
    for name in ["roadsave", "roadsave-bench"]:
        if not os.access(os.path.join(options.bin, name), os.X_OK):
            sys.exit("bench_ingest: no %s in %s (swift build -c release)" % (name, options.bin))
    if options.compare and not os.access(os.path.join(options.compare, "roadsave"), os.X_OK):
        sys.exit("bench_ingest: no roadsave in %s" % options.compare)
    if options.prefill < 0:
        sys.exit("bench_ingest: --prefill must be 0 or more")
    flood, records = bench_services.input_file(options, "main", 0, max(1, options.records // options.devices))
    sender = os.path.join(options.bin, "roadsave")
    runs = [("ack-server", "ack", options.bin), ("ingest", "ingest", options.bin)]
    if options.compare:
        runs.append(("ingest (compare)", "ingest", options.compare))
    figures = {name: [] for name, _, _ in runs}
    written = {name: [] for name, _, _ in runs}
    scratch = tempfile.mkdtemp(prefix="roadsave-bench-ingest-")
    try:
        for round_number in range(options.rounds):
            # The ingests' order alternates, so that neither always follows the other.
            order = runs if round_number % 2 == 0 else [runs[0]] + runs[:0:-1]
            for name, server, binaries in order:
                cpu, bytes_written = measure(server, binaries, sender, flood, records, scratch, options.prefill)
                figures[name].append(cpu)
                written[name].append(bytes_written)
            print("round %d: %s" % (round_number + 1, ", ".join(
                "%s %.2f µs %s B" % (name, figures[name][-1], amount(written[name][-1])) for name, _, _ in runs)),
                flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    bare = statistics.median(figures["ack-server"])
    # Rounds whose bytes written could be read (None where the kernel keeps no count).
    known_written = {name: [value for value in values if value is not None] for name, values in written.items()}
    prefilled = " (ingest's journal holding %d floods)" % options.prefill if options.prefill else ""
    print("CPU and bytes written a record, median of %d rounds (range)%s:" % (options.rounds, prefilled))
    for name, _, _ in runs:
        values = figures[name]
        median = statistics.median(values)
        ratio = "" if name == "ack-server" else ", %.2f× the ack-server" % (median / bare)
        known = known_written[name]
        bytes_written = ("%.0f bytes written (%.0f–%.0f)" % (statistics.median(known), min(known), max(known))
                         if known else "bytes written unknown (no /proc/PID/io)")
        print("  %-17s %.2f µs (%.2f–%.2f)%s; %s" % (name, median, min(values), max(values), ratio, bytes_written))
    if options.json:
        figures_out = [{
            "figure": "ingest alone: CPU a record (median of %d rounds)%s" % (options.rounds, prefilled),
            "value": statistics.median(figures["ingest"]), "unit": "µs/record",
            "baseline": "the ack-server alone, the same client and flood, alternating",
            "baselineValue": bare, "target": "ratio <= 1.5",
        }]
        if known_written["ingest"]:
            figures_out.append({
                "figure": "ingest alone: bytes written to disk a record (the journal's log and file)%s" % prefilled,
                "value": statistics.median(known_written["ingest"]), "unit": "bytes/record",
            })
        with open(options.json, "w") as out:
            json.dump(figures_out, out, indent=1)


if __name__ == "__main__":
    main()
