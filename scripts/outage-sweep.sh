#!/usr/bin/env bash
# The outage suite (Tests/IntegrationTests/OutageTests.swift) over many seeds, one after the other, outside
# `make test`: each seed runs every fault once; a line per seed, then the failures by fault and the seeds that
# failed (rerun one with ROADSAVE_TEST_SEED=SEED). Needs a built test bundle (`swift build --build-tests`); the
# bundle and the executables are copied first, so building while it runs changes nothing of what it measures.
#
#   scripts/outage-sweep.sh [--seeds N] [--first SEED] [--bin-dir DIR] [--log FILE]
#
# --seeds N      how many seeds (default 50)
# --first SEED   the first seed; the others follow it (default 1000)
# --bin-dir DIR  run the services from DIR instead of the build folder (ROADSAVE_BIN_DIR), e.g. an older build
# --log FILE     every run's output, appended (default out/outage-sweep.log)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"

seeds=50 first=1000 bin_dir="" log=out/outage-sweep.log
while (($#)); do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --first) first="$2"; shift 2 ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --log) log="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "outage-sweep: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$seeds" =~ ^[0-9]+$ && "$first" =~ ^[0-9]+$ ]] || { echo "outage-sweep: --seeds and --first take whole numbers" >&2; exit 2; }
mkdir -p "$(dirname "$log")"
source scripts/test-snapshot.sh
snapshot_tests outage-sweep "$bin_dir"

declare -A failures_by_fault=()
failed_seeds=()
for ((seed = first; seed < first + seeds; seed++)); do
  output=$(ROADSAVE_TEST_SEED=$seed run_snapshot_tests OutageTests) && status=0 || status=$?
  printf '%s\n' "== seed $seed (exit $status)" "$output" >>"$log"
  # A failed case is reported by Swift Testing as "✘ Test <name>(…) recorded an issue with 1 argument fault → X".
  faults=$(grep -o 'recorded an issue with 1 argument fault → [A-Za-z]*' <<<"$output" | awk '{print $NF}' | sort -u | tr '\n' ' ' || true)
  if grep -q 'aGatewayWithoutWatermarks.*recorded an issue' <<<"$output"; then faults+="withoutWatermarks "; fi
  if ((status != 0)) && [ -z "$faults" ]; then faults="other "; fi
  if [ -n "$faults" ]; then
    failed_seeds+=("$seed")
    for fault in $faults; do failures_by_fault[$fault]=$((${failures_by_fault[$fault]:-0} + 1)); done
    echo "seed $seed: FAILED ($faults)"
  else
    echo "seed $seed: passed"
  fi
done

echo "outage sweep: ${#failed_seeds[@]} of $seeds seeds failed${failed_seeds:+ (${failed_seeds[*]})}"
for fault in "${!failures_by_fault[@]}"; do echo "  $fault: ${failures_by_fault[$fault]}"; done
echo "every run's output: $log"
((${#failed_seeds[@]} == 0))
