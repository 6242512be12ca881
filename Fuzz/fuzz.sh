#!/usr/bin/env bash
# libFuzzer targets for the decoders that read outside input. See Fuzz/README.md.
#
#   Fuzz/fuzz.sh build              build every target into .build/fuzz
#   Fuzz/fuzz.sh run SECONDS [T…]   build, then run each target (all when none named) for SECONDS
#   Fuzz/fuzz.sh list               the target names
#
# Targets are built with `swiftc -sanitize=fuzzer,address` directly, not through SwiftPM (a SwiftPM executable's renamed
# `main` breaks the libFuzzer link). The project modules a target needs are compiled once into static libraries with
# the same instrumentation.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FUZZ="$ROOT/Fuzz"
OUT="$ROOT/.build/fuzz"
export PATH="$PATH:/opt/swift/usr/bin"
SWIFTC="${SWIFTC:-swiftc}"
# The Swift runtime's own backtracer would hold libFuzzer's crash handling (and a pipe) open; libFuzzer reports.
export SWIFT_BACKTRACE=enable=no
# -O: libFuzzer needs speed; asserts in the targets use `require`, which stays in optimized builds.
FLAGS=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -I "$OUT" -I "$ROOT/Shared/CMessagePack"
       -I "$ROOT/Shared/CZeroMQ")

TARGETS=(msgpack_value record_batch json_value record_json acknowledgement control_request detection_settings
         feed_messages event_body catch_up_request gateway_batch journal_chunk)

# Extra project sources compiled into a target's own module (internal types, or types whose module would drag in
# sockets and SQLite).
extra_sources() {
    case "$1" in
        gateway_batch) echo "$ROOT/Services/Ingest/GatewayBatch.swift $ROOT/Services/Ingest/GatewayBody.swift" ;;
        *) ;;
    esac
}

# The dictionary of a target, if any (Fuzz/dictionaries).
dictionary() {
    case "$1" in
        json_value|record_json|record_batch|acknowledgement|control_request|detection_settings|catch_up_request)
            echo "-dict=$FUZZ/dictionaries/json.dict" ;;
        *) ;;
    esac
}

# module name, source directory, module dependencies already built
build_module() {
    local name="$1" dir="$2" stamp="$OUT/lib$1.a"
    local newest=""
    [[ -f "$stamp" ]] && newest=$(find "$dir" -name '*.swift' -newer "$stamp" | head -1)
    if [[ -f "$stamp" && -z "$newest" ]]; then return; fi
    echo "fuzz: building module $name" >&2
    "$SWIFTC" "${FLAGS[@]}" -module-name "$name" -emit-module -emit-module-path "$OUT/$name.swiftmodule" \
        -emit-library -static -o "$stamp" "$dir"/*.swift 2>&1 | grep -v "Cannot export local symbol" || true
    [[ -f "$stamp" ]] || { echo "fuzz: module $name did not build" >&2; exit 1; }
}

build_target() {
    local target="$1" binary="$OUT/$1"
    local sources=("$FUZZ/Support/"*.swift "$FUZZ/Targets/$target.swift")
    local extra
    extra=$(extra_sources "$target")
    [[ -n "$extra" ]] && sources+=($extra)
    if [[ -x "$binary" && -z "$(find "${sources[@]}" "$OUT"/*.a -newer "$binary" | head -1)" ]]; then return; fi
    echo "fuzz: building target $target" >&2
    # gold warns about every ASan helper symbol; the warnings are harmless and drown the real errors.
    "$SWIFTC" "${FLAGS[@]}" -module-name "Fuzz_$target" "${sources[@]}" -o "$binary" \
        -L "$OUT" -lDetectionEngine -lWire -lZeroMQ -lCommandSettings -lLogging -lRecordCodecs -lRoadSaveModel -lTerminalProgress -lSystemKit -lmsgpackc -lzmq 2>&1 | grep -v "Cannot export local symbol" || true
    [[ -x "$binary" ]] || { echo "fuzz: target $target did not build" >&2; exit 1; }
}

build_all() {
    mkdir -p "$OUT"
    # The one lock and clock (SystemKit) below everything; Log (Logging) writes above the terminal's progress line
    # (TerminalProgress). The model, its JSON (RecordCodecs), and the settings that DetectionEngine reads.
    build_module SystemKit "$ROOT/Shared/SystemKit"
    build_module TerminalProgress "$ROOT/Shared/TerminalProgress"
    build_module RoadSaveModel "$ROOT/Shared/RoadSaveModel"
    build_module RecordCodecs "$ROOT/Shared/RecordCodecs"
    build_module Logging "$ROOT/Shared/Logging"
    build_module CommandSettings "$ROOT/Shared/CommandSettings"
    build_module Wire "$ROOT/Shared/Wire"
    # Ingest's gateway messages know the CurveZMQ allow-list entries (ZeroMQ module).
    build_module ZeroMQ "$ROOT/Shared/ZeroMQ"
    build_module DetectionEngine "$ROOT/Services/Detection/Engine"
    local target
    for target in "$@"; do build_target "$target"; done
}

# Runs one target for SECONDS on a scratch copy of its seeds (the checked-in corpus stays small); a finding is kept
# in .build/fuzz/findings/TARGET and fails the run.
run_target() {
    local target="$1" seconds="$2"
    local work="$OUT/corpus/$target" findings="$OUT/findings/$target"
    mkdir -p "$work" "$findings"
    echo "fuzz: $target for ${seconds}s" >&2
    local status=0
    # shellcheck disable=SC2046
    "$OUT/$target" $(dictionary "$target") -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$findings/" "$work" "$FUZZ/corpus/$target" >"$OUT/$target.log" 2>&1 || status=$?
    # executions, executions a second, and the coverage reached (edges, features, corpus) from the last status line
    local runs rate cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$target.log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$OUT/$target.log")
    cov=$(grep -oE "cov: [0-9]+ ft: [0-9]+ corp: [0-9]+" "$OUT/$target.log" | tail -1)
    echo "  $target: ${runs:-?} runs, ${rate:-?}/s, $cov" >&2
    if [[ $status -ne 0 ]]; then
        echo "fuzz: $target FAILED (exit $status); log $OUT/$target.log, input in $findings" >&2
        grep -E "ERROR|Fatal error|fuzz requirement|SUMMARY" "$OUT/$target.log" | head -5 >&2 || true
        return 1
    fi
}

command="${1:-}"
case "$command" in
    list) printf '%s\n' "${TARGETS[@]}" ;;
    build)
        shift
        (( $# )) || set -- "${TARGETS[@]}"
        build_all "$@"
        ;;
    run)
        seconds="${2:?usage: fuzz.sh run SECONDS [TARGET…]}"
        shift 2
        (( $# )) || set -- "${TARGETS[@]}"
        build_all "$@"
        failed=()
        for target in "$@"; do run_target "$target" "$seconds" || failed+=("$target"); done
        if (( ${#failed[@]} )); then echo "fuzz: findings in: ${failed[*]}" >&2; exit 1; fi
        echo "fuzz: no findings in ${#@} targets" >&2
        ;;
    *) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
