#!/usr/bin/env bash
# make demo: the product at work on this machine. `roadsave up` runs sensor-ingest, detection and the notifier on
# loopback; a gateway (`roadsave send`) sends a simulated morning of four devices, one of which crashes; an alerting
# system (`roadsave tail`) prints the events as the notifier delivers them; then the services stop cleanly.
#
#   scripts/demo.sh [ROADSAVE]      (default .build/debug/roadsave; make demo builds it first)
#
# The tail stops after as many events as `roadsave replay` gives for the same records (a deterministic end, not a
# timeout), and every wait is bounded. The data directory and the records are in out/demo (ROADSAVE_DEMO_DIR to
# choose; made afresh each run).
set -Eeuo pipefail
# --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -Eeuo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; esac

cd "$(dirname "$0")/.."
ROADSAVE=${1:-.build/debug/roadsave}
[ -x "$ROADSAVE" ] || { echo "demo: $ROADSAVE is not built (make build)" >&2; exit 2; }
DEMO=${ROADSAVE_DEMO_DIR:-out/demo}
rm -rf "$DEMO" && mkdir -p "$DEMO"
UP_PID= TAIL_PID=

stop() {
  local status=$?
  trap - EXIT INT TERM
  [ -n "$TAIL_PID" ] && kill "$TAIL_PID" 2>/dev/null
  if [ -n "$UP_PID" ] && kill -0 "$UP_PID" 2>/dev/null; then
    kill -TERM "$UP_PID" 2>/dev/null
    wait "$UP_PID" 2>/dev/null || { echo "demo: roadsave up did not stop cleanly (see $DEMO/up.log)" >&2; status=1; }
  fi
  exit "$status"
}
trap stop EXIT
trap 'exit 130' INT TERM

# Six free loopback ports in a row, for up's --base-port.
BASE=$(python3 -c '
import socket
for base in range(20000, 60000, 7):
    sockets = []
    try:
        for port in range(base, base + 6):
            s = socket.socket(); s.bind(("127.0.0.1", port)); sockets.append(s)
    except OSError:
        continue
    finally:
        for s in sockets: s.close()
    print(base); break')

"$ROADSAVE" simulate --devices 4 --crashes 1 --seed 7 --duration 45 --output "$DEMO/morning.ndjson" >/dev/null
EXPECTED=$("$ROADSAVE" replay "$DEMO/morning.ndjson" 2>/dev/null | wc -l)
echo "--- a simulated morning: 4 devices, one crash, $(wc -l <"$DEMO/morning.ndjson") records ($DEMO/morning.ndjson)"

echo "--- roadsave up: sensor-ingest, detection and the notifier on 127.0.0.1:$BASE-$((BASE + 5)) (log $DEMO/up.log)"
ROADSAVE_APPLICATIONS=demo-app "$ROADSAVE" up --data-dir "$DEMO/data" --base-port "$BASE" --log-level warning \
  >"$DEMO/up.log" 2>&1 &
UP_PID=$!
for _ in $(seq 1 300); do
  grep -qx ready "$DEMO/up.log" && break
  kill -0 "$UP_PID" 2>/dev/null || { cat "$DEMO/up.log" >&2; echo "demo: roadsave up failed" >&2; exit 1; }
  sleep 0.1
done
grep -qx ready "$DEMO/up.log" || { cat "$DEMO/up.log" >&2; echo "demo: roadsave up was not ready within 30 s" >&2; exit 1; }

# The alerting system: every event the notifier keeps, from the start (catch-up), then live, until replay's count.
echo "--- roadsave tail: the events as the notifier delivers them"
"$ROADSAVE" tail --endpoint "tcp://127.0.0.1:$((BASE + 4))" --catch-up-endpoint "tcp://127.0.0.1:$((BASE + 5))" \
  --since 0 --count "$EXPECTED" --timeout 120 &
TAIL_PID=$!

echo "--- roadsave send: the gateway sends the morning to sensor-ingest" >&2
"$ROADSAVE" send "$DEMO/morning.ndjson" --endpoint "tcp://127.0.0.1:$BASE" --no-progress >&2
wait "$TAIL_PID" || { echo "demo: the tail ended without the $EXPECTED events" >&2; exit 1; }
TAIL_PID=
echo "--- $EXPECTED events, as roadsave replay gives them; stopping the services" >&2
kill -TERM "$UP_PID"
wait "$UP_PID" || { echo "demo: roadsave up did not stop cleanly (see $DEMO/up.log)" >&2; exit 1; }
UP_PID=
echo "--- stopped cleanly" >&2
