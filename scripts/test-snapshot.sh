# Sourced by the scripts that run tests in loops outside `make test` (outage-sweep.sh, repeat-test.sh): a copy of
# the test bundle and the service executables, so that building while a loop runs changes nothing of what it runs.

# snapshot_tests NAME [BIN_DIR]: copies .build/debug's test bundle and the executables of BIN_DIR (default the build
# folder) into a temporary folder removed at exit, exports ROADSAVE_BIN_DIR to it, and sets `snapshot` to it.
# `run_snapshot_tests FILTER` then runs the copied bundle's Swift Testing tests matching FILTER, colours removed.
snapshot_tests() {
  local name="$1" executables="${2:-.build/debug}" build=.build/debug
  [ -x "$build/RoadSavePackageTests.xctest" ] || {
    echo "$name: no test bundle at $build (run: swift build --build-tests)" >&2; exit 2; }
  snapshot=$(mktemp -d "/tmp/roadsave-$name.XXXXXX")
  trap 'rm -rf "$snapshot"' EXIT
  cp "$build/RoadSavePackageTests.xctest" "$snapshot/"
  for executable in roadsave roadsave-ingest roadsave-detect roadsave-notify; do
    cp "$executables/$executable" "$snapshot/" || { echo "$name: no $executable in $executables" >&2; exit 2; }
  done
  export ROADSAVE_BIN_DIR="$snapshot"
}

run_snapshot_tests() {
  "$snapshot/RoadSavePackageTests.xctest" --testing-library swift-testing --filter "$1" 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
}
