#!/usr/bin/env bash
# One test (a swift-testing filter) N times in a row, outside `make test`, from a copy of the test bundle and the
# executables (building meanwhile changes nothing of what runs). Prints a line per run and the count that passed;
# exits non-zero when any run failed. Every run's output is appended to the log.
#
#   scripts/repeat-test.sh FILTER [--times N] [--log FILE]
#
# e.g. scripts/repeat-test.sh SubscriberReconnectTests --times 20
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
case "$1" in -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
filter="$1"; shift
times=20 log=out/repeat-test.log
while (($#)); do
  case "$1" in
    --times) times="$2"; shift 2 ;;
    --log) log="$2"; shift 2 ;;
    *) echo "repeat-test: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$times" =~ ^[0-9]+$ ]] || { echo "repeat-test: --times takes a whole number" >&2; exit 2; }
mkdir -p "$(dirname "$log")"
source scripts/test-snapshot.sh
snapshot_tests repeat-test

passed=0
for ((run = 1; run <= times; run++)); do
  output=$(run_snapshot_tests "$filter") && status=0 || status=$?
  printf '%s\n' "== run $run (exit $status)" "$output" >>"$log"
  if ((status == 0)) && grep -q "passed after" <<<"$output" && ! grep -q "✘" <<<"$output"; then
    passed=$((passed + 1)); echo "run $run: passed"
  else
    echo "run $run: FAILED"
  fi
done
echo "repeat-test: $filter passed $passed of $times runs in a row (output: $log)"
((passed == times))
