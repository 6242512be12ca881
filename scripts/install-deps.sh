#!/usr/bin/env bash
# Installs what building and testing need and the machine lacks: Debian packages with apt-get (as root, after one
# apt-get update). The Swift toolchain itself comes with the machine (/opt/swift). `install-deps.sh bench`: also
# what `make bench` alone needs.
set -euo pipefail

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v gzip >/dev/null 2>&1 || missing+=(gzip)
command -v tar >/dev/null 2>&1 || missing+=(tar)
command -v make >/dev/null 2>&1 || missing+=(make)
# C libraries bound through SwiftPM system-library targets (Shared/C*); the sqlite3 shell lets operators and tests look
# inside the journal and the stores.
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
for header in zmq.h:libzmq3-dev msgpack.h:libmsgpack-dev sodium.h:libsodium-dev sqlite3.h:libsqlite3-dev zstd.h:libzstd-dev \
    microhttpd.h:libmicrohttpd-dev; do
  [ -f "/usr/include/${header%%:*}" ] || missing+=("${header#*:}")
done
# The count guards of make test (scripts/bench_counters.py --check) count system calls under strace; `make bench`
# (install-deps.sh bench) also counts the services' with perf (Debian's linux-perf).
command -v strace >/dev/null 2>&1 || missing+=(strace)
if [ "${1:-}" = bench ]; then
  command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
fi
# The report test (scripts/test_report.py) opens `roadsave report`'s page in headless Chromium through chromedriver.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)

if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The integration tests' gateway, subscriber and webhook receiver are Python programs using pyzmq and msgpack; their
# metrics scraper reads /metrics with the Prometheus client's own text parser.
if ! python3 -c "import zmq, msgpack, prometheus_client" >/dev/null 2>&1; then
  echo "install-deps: installing pyzmq, msgpack and prometheus-client from PyPI" >&2
  python3 -m pip install --quiet pyzmq msgpack prometheus-client 2>&1 | grep -v "Running pip as the 'root' user" >&2 || true
fi

# The report test drives Chromium with selenium and validates the GeoJSON with the geojson package.
if ! python3 -c "import selenium, geojson" >/dev/null 2>&1; then
  echo "install-deps: installing selenium and geojson from PyPI" >&2
  python3 -m pip install --quiet selenium geojson 2>&1 | grep -v "Running pip as the 'root' user" >&2 || true
fi

if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then
    echo "install-deps: swift is at /opt/swift/usr/bin; add it to PATH" >&2
  else
    echo "install-deps: no Swift toolchain found (Swift 6 is needed)" >&2
  fi
  exit 1
fi
