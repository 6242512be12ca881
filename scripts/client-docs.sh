#!/usr/bin/env bash
# The client library's API reference (docs/subscribers.md, "API reference"): the public symbol graph of the built
# RoadSaveClient module (`swift symbolgraph-extract`, as `swift build -emit-symbol-graph` would write it) turned into a
# static site by the toolchain's `docc`, offline (no swift-docc-plugin needed). `make docs` runs it; `make test` too,
# with docc's warnings as errors. ClientTests (DocumentationTests) checks that every public symbol has a doc comment.
#
#   scripts/client-docs.sh [--output DIR]     default .build/docs/RoadSaveClient; open DIR/index.html
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
output=.build/docs/RoadSaveClient
while (($#)); do
  case "$1" in
    --output) output="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "client-docs: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
swift build --target RoadSaveClient >/dev/null
graphs=$(mktemp -d /tmp/roadsave-symbols.XXXXXX)
trap 'rm -rf "$graphs"' EXIT
swift symbolgraph-extract -module-name RoadSaveClient -I .build/debug/Modules -target "$(uname -m)-unknown-linux-gnu" \
  -output-dir "$graphs" -minimum-access-level public -skip-inherited-docs \
  -Xcc -fmodule-map-file=Shared/CZeroMQ/module.modulemap -Xcc -fmodule-map-file=Shared/CMessagePack/module.modulemap
rm -rf "$output"
mkdir -p "$(dirname "$output")"
docc convert --additional-symbol-graph-dir "$graphs" --fallback-display-name RoadSaveClient \
  --fallback-bundle-identifier org.roadsave.RoadSaveClient --fallback-bundle-version 1 --output-path "$output" \
  --transform-for-static-hosting --warnings-as-errors
echo "client-docs: the API reference of RoadSaveClient is in $output (index.html)"
