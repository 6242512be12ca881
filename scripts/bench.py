#!/usr/bin/env python3
"""`make bench`: runs every benchmark of the project and prints one table, written to out/bench.json too.

Each benchmark writes its figures as JSON (a list of {"figure", "value", "unit", "baseline", "baselineValue",
"target"}); this script runs them one after another, adds the ratio to the baseline measured in the same run, whether
the issue's target is met, and the machine's load while the figure was taken, so runs on a shared machine can be
compared: the ratios are the figures to compare, the absolute ones move with the load.

  python3 scripts/bench.py [--bin .build/release] [--records out/bench.ndjson] [--output out/bench.json]
                           [--counter-records out/fleet.ndjson]
                           [--only NAME[,NAME...]] [-- EXTRA ARGUMENTS FOR THE SERVICES BENCHMARK]

Benchmarks, in order (--only picks some): replay (decoding and replay, roadsave-bench FILE), engines (the engines
alone on decoded records, roadsave-bench engines FILE), services (scripts/bench_services.py: the three services with
keys against a bare server, crash latency under load, detection shards), ingest (scripts/bench_ingest.py: sensor-ingest
alone against the bare server alone, on a new journal), ingest-prefilled (the same on a journal already holding four
floods, as a running service's holds millions of records), memory (scripts/bench_memory.py: detection
with many mostly idle devices), counters (scripts/bench_counters.py: heap allocations and system calls a record, a
batch, a feed reply and an event on each hot path, on --counter-records).
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

from benchkit import load_average

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def benchmarks(args, work):
    """(name, command, figures file) of each benchmark, in the order they run."""
    bench = os.path.join(args.bin, "roadsave-bench")
    figures = {name: os.path.join(work, f"{name}.json")
               for name in ("replay", "engines", "services", "ingest", "ingest-prefilled", "memory", "counters")}
    return [
        ("replay", [bench, args.records, "--json", figures["replay"]], figures["replay"]),
        ("engines", [bench, "engines", args.records, "--json", figures["engines"]], figures["engines"]),
        ("services", [sys.executable, os.path.join(ROOT, "scripts", "bench_services.py"), "--bin", args.bin,
                      "--json", figures["services"]] + args.extra, figures["services"]),
        ("ingest", [sys.executable, os.path.join(ROOT, "scripts", "bench_ingest.py"), "--bin", args.bin,
                    "--rounds", "3", "--json", figures["ingest"]], figures["ingest"]),
        ("ingest-prefilled", [sys.executable, os.path.join(ROOT, "scripts", "bench_ingest.py"), "--bin", args.bin,
                              "--rounds", "3", "--prefill", "4", "--json", figures["ingest-prefilled"]],
         figures["ingest-prefilled"]),
        ("memory", [sys.executable, os.path.join(ROOT, "scripts", "bench_memory.py"), "--bin", args.bin,
                    "--json", figures["memory"]], figures["memory"]),
        ("counters", [sys.executable, os.path.join(ROOT, "scripts", "bench_counters.py"), "--bin", args.bin,
                      "--records", args.counter_records, "--json", figures["counters"]], figures["counters"]),
    ]


CLAUSE = re.compile(r"^\s*(ratio\s*)?(>=|<=|>|<)\s*([0-9.eE+-]+)")


def target_met(figure):
    """Whether the issue's target is met: True, False, or None when it is not a comparison with a number. A target
    is one or more clauses separated by ";", each ">= N" on the value or "ratio >= N" on the ratio to the baseline
    (">= 500000; ratio >= 0.8")."""
    clauses = [c for c in (figure.get("target") or "").split(";") if c.strip()]
    results = []
    for clause in clauses:
        match = CLAUSE.match(clause)
        if not match:
            return None
        on_ratio, operator, bound = match.group(1), match.group(2), float(match.group(3))
        value = figure.get("ratio") if on_ratio else figure.get("value")
        if value is None:
            return None
        results.append({">=": value >= bound, "<=": value <= bound, ">": value > bound, "<": value < bound}[operator])
    return all(results) if results else None


def number(value):
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--records", default=os.path.join(ROOT, "out", "bench.ndjson"))
    parser.add_argument("--counter-records", default=os.path.join(ROOT, "out", "fleet.ndjson"),
                        help="the records of the work counters (issue 46's fleet: roadsave simulate --devices 200 "
                             "--duration 20 --seed 7)")
    parser.add_argument("--output", default=os.path.join(ROOT, "out", "bench.json"))
    parser.add_argument("--only",
                        help="comma-separated benchmarks to run (replay, engines, services, ingest, ingest-prefilled, "
                             "memory, counters)")
    parser.add_argument("extra", nargs="*", help="after --: arguments for bench_services.py")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None

    rows, failures = [], []
    with tempfile.TemporaryDirectory() as work:
        for name, command, figures_file in benchmarks(args, work):
            if only and name not in only:
                continue
            if not os.path.exists(command[0]) and not command[0].endswith("python3") and command[0] != sys.executable:
                failures.append(f"{name}: {command[0]} is not built")
                continue
            if command[0] == sys.executable and not os.path.exists(command[1]):
                failures.append(f"{name}: {os.path.relpath(command[1], ROOT)} does not exist")
                continue
            print(f"== {name}: {' '.join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in command)}",
                  flush=True)
            before = load_average()
            status = subprocess.run(command).returncode
            after = load_average()
            if status != 0 or not os.path.exists(figures_file):
                failures.append(f"{name}: exited with status {status}")
                continue
            with open(figures_file) as f:
                for figure in json.load(f):
                    base = figure.get("baselineValue")
                    figure["ratio"] = figure["value"] / base if base and figure.get("value") is not None else None
                    figure["benchmark"] = name
                    figure["load"] = [before, after]
                    figure["met"] = target_met(figure)
                    rows.append(figure)

    print()
    table = [["benchmark", "figure", "value", "unit", "baseline", "ratio", "target", "met", "load"]]
    for r in rows:
        table.append([r["benchmark"], r["figure"], number(r.get("value")), r.get("unit", ""),
                      number(r.get("baselineValue")), f"{r['ratio']:.2f}" if r.get("ratio") is not None else "-",
                      r.get("target") or "-", {True: "yes", False: "NO", None: "-"}[r["met"]],
                      f"{r['load'][0]}→{r['load'][1]}"])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    right = {2, 4, 5}  # numbers
    for n, row in enumerate(table):
        print("  ".join(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)))
        if n == 0:
            print("  ".join("-" * w for w in widths))
    baselines = sorted({(r["benchmark"], r["baseline"]) for r in rows if r.get("baseline")})
    if baselines:
        print("\nbaselines (measured in the same run):")
        for benchmark, baseline in baselines:
            print(f"  {benchmark}: {baseline}")
    for failure in failures:
        print(f"not measured: {failure}", file=sys.stderr)

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit or None,
        "cpus": os.cpu_count(),
        "figures": rows,
        "notMeasured": failures,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(report, f, indent=1)
    print(f"\nwritten: {os.path.relpath(args.output, os.getcwd())}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
