#!/usr/bin/env bash
# make container-test: builds the RoadSave image from the Dockerfile and runs docker-compose.yml for real, offline.
#
#  1. Installs what it needs and lacks (docker.io, docker-compose, debootstrap; apt-get, as root) and starts dockerd
#     if none answers (stopped again at the end).
#  2. Base image without a registry: a Debian bookworm root filesystem from `debootstrap --variant=minbase` on the
#     machine's Debian mirror, with every runtime library the Dockerfile's runtime stage asks for already in it
#     (cached as a tarball in .build/container/, so only the first run downloads), `docker import`ed.
#  3. Executables: `swift build -c release` on the host (the toolchain in /opt/swift; incremental), staged with the
#     Swift runtime libraries as an image holding /staging, which stands in for the Dockerfile's build stage
#     (--build-arg BINARIES). The Dockerfile is built unchanged, without a network, with BuildKit (docker.io's
#     client), which skips the unused build stage; its apt-get steps find every package installed and fetch nothing.
#     CONTAINER_TEST_BUILD=toolchain compiles in the build stage instead, on a builder image of a second debootstrap
#     (the development packages) and /opt/swift/usr as /usr, with the classic builder (as docker-compose builds).
#  4. docker-compose.yml with scripts/container-test.compose.yml on top (an internal network: the containers reach
#     only each other, no port is published), CurveZMQ keys made for the run: up, wait for the health checks; a
#     subscriber container (roadsave tail) and a gateway container (roadsave simulate, a fleet with a crash, then
#     roadsave send). Asserts that the crash reaches the subscriber with the eventID `roadsave replay` gives for the
#     same records, and that the notifier's store then holds exactly replay's events, each once.
#  5. `docker-compose restart`, then `up --force-recreate` (new containers on the same volumes): the stores are the
#     same (ingest's journal ID and records, detection's journal positions, the notifier's events), and every stop
#     was SIGTERM, exit 0, within the service's stop_grace_period. Last `docker-compose stop`, the same checks.
#  6. Removes what it made, also when it fails or is interrupted: containers, network, volumes, the images of the
#     run (and the classic builder's untagged ones), the BuildKit cache records the build added, the keys. It keeps
#     .build/container (the debootstrap tarballs and the staged executables).
#
# Every wait is bounded. Environment: DEBIAN_MIRROR (default: the machine's apt source for bookworm),
# CONTAINER_TEST_BUILD=host|toolchain (default host), CONTAINER_TEST_KEEP=1 (leave everything in place for a look;
# remove it later with the script whose path it prints).
set -Eeuo pipefail
# --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -Eeuo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; esac

cd "$(dirname "$0")/.."
ROOT=$PWD
# CONTAINER_TEST_BUILD=toolchain: what the toolchain needs besides itself (as the swift:6.x-bookworm images install),
# and the build stage's development packages.
BUILD_PACKAGES="binutils libc6-dev libgcc-12-dev libstdc++-12-dev libcurl4-openssl-dev libxml2-dev libedit2 libncurses-dev
libsqlite3-0 pkg-config tzdata zlib1g-dev libzmq3-dev libmsgpack-dev libsodium-dev libsqlite3-dev libzstd-dev"
BUILD_MODE=${CONTAINER_TEST_BUILD:-host}
case $BUILD_MODE in host | toolchain) ;; *) echo "CONTAINER_TEST_BUILD must be host or toolchain" >&2; exit 2 ;; esac
# The fleet: three devices for ten minutes, the first one crashes (1,907 records; replay gives 8 events). Ten, not
# five: the crashed device's trip ends 240 s (stopDelay) of event time after it stood still, and with five minutes of
# records that end would come only from detection's wall clock, minutes after the send.
APP=ctest-app
SIMULATE="roadsave simulate --devices 3 --crashes 1 --seed 11 --duration 10 --app $APP"

LOG_NAME=container-test
STEP_WIDTH=42

[ "$(id -u)" = 0 ] || { echo "container-test: needs root (apt-get, dockerd, debootstrap)" >&2; exit 1; }

RUN_ID=$(date +%Y%m%d%H%M%S)-$$
PROJECT=roadsave-ctest-$RUN_ID
IMAGE=roadsave-ctest:$RUN_ID
BASE_IMAGE=roadsave-ctest-base:$RUN_ID
BINARIES_IMAGE=roadsave-ctest-binaries:$RUN_ID
BUILDER_IMAGE=roadsave-ctest-builder:$RUN_ID
WORK=$(mktemp -d /tmp/roadsave-ctest.XXXXXX)
KEYS=$WORK/keys
CACHE_BEFORE=
# shellcheck source=scripts/container-lib.sh
. "$ROOT/scripts/container-lib.sh"
export ROADSAVE_IMAGE=$IMAGE ROADSAVE_KEYS=$KEYS ROADSAVE_APPLICATIONS=$APP ROADSAVE_LOG_LEVEL=info
COMPOSE=(docker-compose -p "$PROJECT" -f "$ROOT/docker-compose.yml" -f "$ROOT/scripts/container-test.compose.yml")
compose() { "${COMPOSE[@]}" "$@"; }

build_cache_ids() { "$DOCKER" system df -v --format '{{range .BuildCache}}{{println .ID}}{{end}}' 2>/dev/null | sort; }

# Removes what this run made in Docker: the project's containers, network and volumes, the run's images (and the
# classic builder's untagged ones), the BuildKit cache records the build added.
remove_run() {
  "$DOCKER" info >/dev/null 2>&1 || return 0
  compose down -v --remove-orphans --timeout 20 >/dev/null 2>&1 || true
  # Whatever `down` left of the project (one-off containers, a half-made network or volume), by its label.
  local label=com.docker.compose.project=$PROJECT ids image id pass new
  ids=$("$DOCKER" ps -aq --filter "label=$label"); [ -z "$ids" ] || "$DOCKER" rm -f $ids >/dev/null || true
  ids=$("$DOCKER" volume ls -q --filter "label=$label"); [ -z "$ids" ] || "$DOCKER" volume rm $ids >/dev/null || true
  ids=$("$DOCKER" network ls -q --filter "label=$label"); [ -z "$ids" ] || "$DOCKER" network rm $ids >/dev/null || true
  for image in "$IMAGE" "$BINARIES_IMAGE" "$BUILDER_IMAGE" "$BASE_IMAGE"; do
    "$DOCKER" image inspect "$image" >/dev/null 2>&1 && { "$DOCKER" rmi "$image" >/dev/null || true; }
  done
  # The classic builder's images of the build stage, once nothing names them (dangling).
  if [ -s "$WORK/intermediate-images" ]; then
    ids=$("$DOCKER" images -q --filter dangling=true)
    for id in $(grep -Fx -f "$WORK/intermediate-images" <<<"$ids"); do "$DOCKER" rmi "$id" >/dev/null 2>&1 || true; done
  fi
  # BuildKit's cache records this run added (not the daemon's others); a record another one uses goes on a later pass.
  if [ -n "$CACHE_BEFORE" ]; then
    for pass in 1 2 3; do
      new=$(comm -13 "$WORK/cache-before" <(build_cache_ids))
      [ -z "$new" ] && break
      for id in $new; do "$DOCKER" builder prune -af --filter "id=$id" >/dev/null 2>&1 || true; done
    done
  fi
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM ERR
  set +e
  if [ "$status" != 0 ] && [ -n "${PROJECT_UP:-}" ]; then
    log "logs of the services (last 40 lines each):"
    compose logs --no-color --tail 40 >&2 2>&1 || true
  fi
  if [ "${CONTAINER_TEST_KEEP:-}" = 1 ]; then
    # What remove_run needs, for later.
    { echo '#!/usr/bin/env bash'
      declare -p DOCKER PROJECT IMAGE BINARIES_IMAGE BUILDER_IMAGE BASE_IMAGE WORK CACHE_BEFORE COMPOSE \
        ROADSAVE_IMAGE ROADSAVE_KEYS ROADSAVE_APPLICATIONS ROADSAVE_LOG_LEVEL
      declare -f compose build_cache_ids remove_run
      echo 'remove_run; rm -rf "$WORK"'; } >"$WORK/remove.sh"
    log "kept: project $PROJECT (docker-compose ${COMPOSE[*]:1}), images roadsave-ctest*:$RUN_ID, keys $KEYS"
    log "remove them with: bash $WORK/remove.sh"
    exit "$status"
  fi
  log "cleaning up"
  remove_run
  end_run "$status"
}
trap_run


# ---- 1. tools and the engine ------------------------------------------------------------------------------------
step "tools and dockerd"
tools_and_dockerd
build_cache_ids >"$WORK/cache-before"; CACHE_BEFORE=1
step_done

# ---- 2. the runtime base: debootstrap, cached (rootfs_tarball: scripts/container-lib.sh) ------------------------
step "base image (debootstrap, cached)"
"$DOCKER" import -c 'CMD ["bash"]' "$(rootfs_tarball runtime "$RUNTIME_PACKAGES")" "$BASE_IMAGE" >/dev/null
step_done

# ---- 3. the executables ------------------------------------------------------------------------------------------
# host (default): built here, staged as an image that stands in for the build stage (BuildKit skips that stage).
# toolchain: the Dockerfile's build stage compiles them in a builder image made like swift:6.x-bookworm (the
# development packages from debootstrap, this machine's /opt/swift/usr as /usr), with the classic builder, which
# docker-compose's `build:` also uses. Either way the host builds `roadsave` (keys, and the replay the events are
# checked against).
step "executables ($BUILD_MODE)"
if [ "$BUILD_MODE" = host ]; then
  stage_host_binaries "$BINARIES_IMAGE"
  BUILD=(env DOCKER_BUILDKIT=1 "$DOCKER" build --build-arg "BINARIES=$BINARIES_IMAGE")
else
  host_binaries roadsave
  toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
  tarball=$(rootfs_tarball build "$BUILD_PACKAGES")
  log "builder image: the build root filesystem and $toolchain as /usr"
  builder=$WORK/builder
  mkdir -p "$builder" && tar -C "$builder" -xf "$tarball"
  # Hard links where the toolchain is on the same file system (nothing writes to them: they go into the tar).
  cp -alf "$toolchain/." "$builder/usr/" 2>/dev/null || cp -af "$toolchain/." "$builder/usr/"
  tar --numeric-owner -C "$builder" -cf - . | "$DOCKER" import -c 'CMD ["bash"]' - "$BUILDER_IMAGE" >/dev/null
  rm -rf "$builder"
  BUILD=(env DOCKER_BUILDKIT=0 "$DOCKER" build --force-rm --build-arg "SWIFT_IMAGE=$BUILDER_IMAGE")
fi
step_done

step "docker build (the Dockerfile; $BUILD_MODE)"
# Without a network: a package missing from the base fails the build here rather than being fetched.
"${BUILD[@]}" --network none --build-arg "RUNTIME_IMAGE=$BASE_IMAGE" -t "$IMAGE" "$ROOT" >"$WORK/build.log" 2>&1 \
  || { build_failed=1; tail -40 "$WORK/build.log" >&2; }
# The classic builder leaves the build stage's images untagged: they are this run's too.
grep -oE -- '---> [0-9a-f]{12}$' "$WORK/build.log" | cut -c6- >"$WORK/intermediate-images" || true
[ -z "${build_failed:-}" ] || fail "docker build failed"
check_image "$IMAGE"
step_done

# ---- 4. keys, up, a crash --------------------------------------------------------------------------------------
step "keys, docker-compose up, health checks"
make_keys "$APP"
# Secrets are bind-mounted as they are: the containers' user (uid 10001) must own the secret keys (mode 0600).
chown 10001 "$KEYS"/*.key && chmod 0644 "$KEYS/allow.txt" "$KEYS"/*.key.pub

compose config -q || fail "docker-compose refuses the files"
PROJECT_UP=1
timeout 300 "${COMPOSE[@]}" up -d --no-build >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; fail "docker-compose up failed"; }

container() { compose ps -q "$1"; }
metrics_port() { case $1 in ingest) echo 9550 ;; detect) echo 9551 ;; notify) echo 9552 ;; esac; }
# Ready: /readyz answers 200 inside the container (the health check is /healthz, liveness only).
ready() { # SERVICE
  "$DOCKER" exec "$(container "$1")" bash -c "exec 3<>/dev/tcp/127.0.0.1/$(metrics_port "$1") &&
    printf 'GET /readyz HTTP/1.0\\r\\n\\r\\n' >&3 && read -r _ status _ <&3 && [ \"\$status\" = 200 ]" 2>/dev/null
}
wait_healthy() { # SECONDS: healthy (alive) and ready, every service
  local deadline=$(($(date +%s) + $1)) service state all
  while :; do
    all=1
    for service in ingest detect notify; do
      state=$("$DOCKER" inspect -f '{{.State.Health.Status}}' "$(container "$service")" 2>/dev/null || echo missing)
      [ "$state" = healthy ] && ready "$service" || all=
    done
    [ -n "$all" ] && return 0
    [ "$(date +%s)" -lt "$deadline" ] || fail "the services were not healthy within $1 s"
    sleep 1
  done
}
wait_healthy 120
[ "$("$DOCKER" network inspect -f '{{.Internal}}' "${PROJECT}_default")" = true ] || fail "the project's network is not internal"
step_done

step "subscriber, gateway with a crash"
# What the services must give: `roadsave replay` of the same records (the same simulate line: the same bytes).
$host_roadsave ${SIMULATE#roadsave } --output "$WORK/fleet.ndjson" >/dev/null
$host_roadsave replay "$WORK/fleet.ndjson" 2>/dev/null >"$WORK/expected.ndjson"
expected_crash=$(python3 -c 'import json, sys
ids = [e["eventID"] for e in map(json.loads, open(sys.argv[1])) if e["event"] == "crashDetected"]
assert len(ids) == 1, ids
print(ids[0])' "$WORK/expected.ndjson")

client_keys_sub="--key /run/secrets/subscriber_key --server-key /run/secrets/notify_public_key"
tail_cmd="roadsave tail --endpoint tcp://notify:5554 --catch-up-endpoint tcp://notify:5555 $client_keys_sub"
subscriber=$(timeout 60 "${COMPOSE[@]}" run -d --no-deps subscriber $tail_cmd --since 0 --event crashDetected --count 1 \
  --timeout 240 2>"$WORK/run.err" | tail -1)
[ -n "$subscriber" ] || fail "the subscriber container did not start"
timeout 300 "${COMPOSE[@]}" run --rm --no-deps -T gateway bash -c \
  "$SIMULATE --output /tmp/fleet.ndjson && roadsave send /tmp/fleet.ndjson --endpoint tcp://ingest:5550 \
   --key /run/secrets/gateway_key --server-key /run/secrets/ingest_public_key" >"$WORK/send.out" 2>"$WORK/send.err" \
  || { cat "$WORK/send.out" "$WORK/send.err" >&2; fail "the gateway's send failed"; }
summary=$(tail -1 "$WORK/send.out")
log "gateway: $summary"
sent=$(wc -l <"$WORK/fleet.ndjson")
[[ "$summary" =~ ^sent\ $sent,\ accepted\ $sent,\ rejected\ 0, ]] || fail "expected all $sent records accepted: $summary"
status=$(timeout 250 "$DOCKER" wait "$subscriber") || fail "the subscriber did not finish"
"$DOCKER" logs "$subscriber" >"$WORK/crash.ndjson" 2>"$WORK/subscriber.err"
"$DOCKER" rm "$subscriber" >/dev/null
[ "$status" = 0 ] || { cat "$WORK/subscriber.err" >&2; fail "the subscriber exited $status"; }
got=$(python3 -c 'import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(" ".join(e["eventID"] for e in events if e.get("event") == "crashDetected"))' "$WORK/crash.ndjson")
[ "$got" = "$expected_crash" ] || fail "subscriber got crash [$got], replay gives $expected_crash"
log "crashDetected $got reached the subscriber container"
step_done

# The notifier's events, all of them (catch-up from position 0, then 2 s live): what check_events compares.
all_events() { timeout 60 "${COMPOSE[@]}" run --rm --no-deps -T subscriber $tail_cmd --since 0 --timeout 2; }

# The services' stores, read with the sqlite3 shell inside each container.
fingerprint() {
  local sql=(compose exec -T)
  printf 'ingest %s | detect %s | notify %s\n' \
    "$("${sql[@]}" ingest sqlite3 /var/lib/roadsave/ingest/journal.sqlite \
        "SELECT (SELECT value FROM meta WHERE key = 'journal_id') || ' records=' || (SELECT sum(records) FROM chunks)")" \
    "$("${sql[@]}" detect sqlite3 /var/lib/roadsave/detect/detection.sqlite \
        "SELECT group_concat(feed || '@' || position, ',') FROM positions")" \
    "$("${sql[@]}" notify sqlite3 /var/lib/roadsave/notify/notifier.sqlite \
        "SELECT 'events=' || count(*) || ' last=' || max(position) FROM events")" | tr -d '\r'
}

# SIGTERM stops since SINCE: each service's container was sent signal 15 and died with exit 0 within its grace.
check_stops() { # LABEL SINCE
  "$DOCKER" events --since "$2" --until "$(date +%s.%N)" --filter type=container \
    --filter "label=com.docker.compose.project=$PROJECT" --filter label=com.docker.compose.oneoff=False \
    --filter event=kill --filter event=die \
    --format '{{.TimeNano}} {{.Action}} {{index .Actor.Attributes "com.docker.compose.service"}} {{index .Actor.Attributes "signal"}} {{index .Actor.Attributes "exitCode"}}' \
    >"$WORK/events.txt"
  python3 - "$1" "$WORK/events.txt" <<'EOF' >&2 || fail "$1: a service did not stop on SIGTERM within its grace period"
import sys
grace = {"ingest": 15.0, "detect": 20.0, "notify": 20.0}   # stop_grace_period in docker-compose.yml
label, path = sys.argv[1], sys.argv[2]
term, ok = {}, True
for line in open(path):
    parts = line.split()
    time, action, service = int(parts[0]) / 1e9, parts[1], parts[2]
    if action == "kill":
        if parts[3] != "15":
            print(f"  {service}: sent signal {parts[3]}"); ok = False
        term.setdefault(service, time)
    elif action == "die":
        code, took = parts[-1], time - term.get(service, time)
        print(f"  {label}: {service} exit {code} {took:.2f} s after SIGTERM (grace {grace[service]:.0f} s)")
        ok &= code == "0" and took < grace[service] and service in term
        term.pop(service, None)
missing = set(grace) - {l.split()[2] for l in open(path) if l.split()[1] == "die"}
if missing:
    print(f"  {label}: no stop seen for {sorted(missing)}"); ok = False
sys.exit(0 if ok else 1)
EOF
}

step "docker-compose restart keeps the data"
check_events "after the send" 90
before=$(fingerprint)
log "stores: $before"
since=$EPOCHREALTIME
timeout 120 "${COMPOSE[@]}" restart >/dev/null 2>&1 || fail "docker-compose restart failed"
check_stops restart "$since"
wait_healthy 120
check_events "after restart" 60
after=$(fingerprint)
[ "$after" = "$before" ] || fail "the stores changed across the restart: $after"
step_done

step "recreated containers keep the volumes"
since=$EPOCHREALTIME
old=$(container notify)
timeout 180 "${COMPOSE[@]}" up -d --no-build --force-recreate ingest detect notify >/dev/null 2>&1 || fail "up --force-recreate failed"
[ "$(container notify)" != "$old" ] || fail "the containers were not recreated"
check_stops recreate "$since"
wait_healthy 120
check_events "after recreate" 60
after=$(fingerprint)
[ "$after" = "$before" ] || fail "the stores changed across recreation: $after"
step_done

step "docker-compose stop (SIGTERM)"
since=$EPOCHREALTIME
timeout 120 "${COMPOSE[@]}" stop >/dev/null 2>&1 || fail "docker-compose stop failed"
check_stops stop "$since"
for service in ingest detect notify; do
  code=$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$(container "$service")")
  [ "$code" = 0 ] || fail "$service exited $code"
done
step_done

log "times:"
printf '  %s\n' "${TIMES[@]}" >&2
