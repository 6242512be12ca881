# What the container tests share (sourced by scripts/container-test.sh and scripts/swarm-test.sh, never run): the
# tools and the engine, Debian root filesystems from debootstrap (no registry is reachable), and the RoadSave image
# built from the Dockerfile unchanged, offline. The caller sets ROOT (the checkout) and WORK and defines LOG_NAME (and
# STEP_WIDTH); it gets CACHE, DOCKER and SUITE, log, fail, step and step_done, DOCKERD_PID (the dockerd it must stop,
# if this started one), mirror, check_events (with an all_events the caller defines), and end_run and trap_run
# (with a cleanup the caller defines).

# The debootstrap tarballs and staged executables, kept between runs.
CACHE=$ROOT/.build/container
export PATH=$PATH:/opt/swift/usr/bin
# Debian's docker.io client: it builds with BuildKit by itself (DOCKER_BUILDKIT=1), where a newer CLI needs buildx.
DOCKER=/usr/bin/docker
SUITE=bookworm

# Log lines with the seconds since the start, failure, and timed steps (LOG_NAME and STEP_WIDTH set by the caller).
since() { awk -v now="$EPOCHREALTIME" -v then="$1" 'BEGIN { printf "%.1f", now - then }'; }
STARTED=$EPOCHREALTIME
log() { printf '[%s %6ss] %s\n' "$LOG_NAME" "$(since "$STARTED")" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
step() { STEP_NAME=$1; STEP_START=$EPOCHREALTIME; log "== $1"; }
TIMES=()
step_done() { TIMES+=("$(printf "%-${STEP_WIDTH:-42}s %6s s" "$STEP_NAME" "$(since "$STEP_START")")"); }

# What the Dockerfile's runtime stage installs (minbase has the rest it uses: dpkg, passwd's groupadd and useradd).
RUNTIME_PACKAGES="libzmq5 libmsgpackc2 libsodium23 libsqlite3-0 libzstd1 sqlite3 libcurl4 libxml2 libstdc++6 zlib1g
tzdata ca-certificates bash libmicrohttpd12"
DOCKERD_PID=

# Installs what is missing of docker.io, docker-compose and debootstrap (apt-get, as root) and starts dockerd if
# none answers.
tools_and_dockerd() {
  local missing=()
  [ -x /usr/bin/docker ] && command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
  fi
  if ! "$DOCKER" info >/dev/null 2>&1; then
    mkdir -p "$CACHE"
    log "starting dockerd (log: $CACHE/dockerd.log)"
    # Its own session, so that a Ctrl-C of the test reaches the test and not the daemon.
    setsid dockerd >"$CACHE/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    for _ in $(seq 1 60); do "$DOCKER" info >/dev/null 2>&1 && break; sleep 0.5; done
    "$DOCKER" info >/dev/null 2>&1 || fail "dockerd did not answer within 30 s (see $CACHE/dockerd.log)"
  fi
  mirror=${DEBIAN_MIRROR:-$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null \
    | awk -v suite="$SUITE" '$2 == suite { print $1; exit }')}
  mirror=${mirror:-http://deb.debian.org/debian/}
}

# Stops the dockerd tools_and_dockerd started, if it did.
stop_dockerd() {
  [ -n "$DOCKERD_PID" ] || return 0
  log "stopping the dockerd this run started (pid $DOCKERD_PID)"
  kill "$DOCKERD_PID" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.5; done
}

# A minbase root filesystem of $SUITE with PACKAGES, as a tarball in the cache (made once per list of packages).
rootfs_tarball() { # NAME PACKAGES → the tarball's path
  local packages key tarball rootfs
  packages=$(echo $2 | tr ' ' ',')
  key=$(printf '%s %s %s' "$SUITE" "$mirror" "$packages" | sha256sum | cut -c1-12)
  tarball=$CACHE/rootfs-$SUITE-$1-$key.tar
  if [ ! -f "$tarball" ]; then
    log "debootstrap --variant=minbase $SUITE ($1) from $mirror, once: a few minutes (log: $CACHE/debootstrap-$1.log)"
    mkdir -p "$CACHE"
    rootfs=$CACHE/rootfs.$$
    rm -rf "$rootfs"
    debootstrap --variant=minbase --include="$packages" "$SUITE" "$rootfs" "$mirror" >"$CACHE/debootstrap-$1.log" 2>&1 \
      || { rm -rf "$rootfs"; fail "debootstrap failed (see $CACHE/debootstrap-$1.log)"; }
    # As debian:bookworm-slim: no package lists or downloaded .debs in the image.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp.$$" . && mv "$tarball.tmp.$$" "$tarball"
    rm -rf "$rootfs"
  fi
  echo "$tarball"
}

# The executables built here with the toolchain in /opt/swift (`swift build -c release`, incremental). Sets bin and
# host_roadsave.
host_binaries() { # PRODUCT…
  local product
  for product in "$@"; do
    swift build -c release --product "$product" 2>&1 | grep -v -E '^(\[[0-9]+/[0-9]+\]|Building for|Write swift-version|Build of product)' >&2 || true
  done
  bin=$(swift build -c release --show-bin-path)
  for product in "$@"; do
    [ -x "$bin/$product" ] || fail "$bin/$product was not built"
  done
  host_roadsave=$bin/roadsave
}

# The four executables and the toolchain's Swift runtime, staged as an image holding /staging that stands in for the
# Dockerfile's build stage (--build-arg BINARIES; BuildKit then skips that stage).
stage_host_binaries() { # BINARIES_IMAGE
  local runtime staging=$CACHE/binaries
  host_binaries roadsave-ingest roadsave-detect roadsave-notify roadsave
  runtime=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')
  rm -rf "$staging" && mkdir -p "$staging/staging/bin" "$staging/staging/swift"
  cp "$bin/roadsave" "$bin/roadsave-ingest" "$bin/roadsave-detect" "$bin/roadsave-notify" "$staging/staging/bin/"
  cp -P "$runtime"/*.so* "$staging/staging/swift/"
  tar -C "$staging" --numeric-owner --owner=0 --group=0 -c staging | "$DOCKER" import - "$1" >/dev/null
}

# The image's executables run, as uid 10001.
check_image() { # IMAGE
  "$DOCKER" run --rm --network none "$1" roadsave-ingest --help >/dev/null || fail "the image's roadsave-ingest does not run"
  [ "$("$DOCKER" run --rm --network none "$1" id -u)" = 10001 ] || fail "the image does not run as uid 10001"
}

# The RoadSave image, offline, as make container-test builds it by default: the executables built and staged here,
# then the Dockerfile built unchanged without a network on a debootstrap base that already has every runtime
# package (a package missing from the base fails the build rather than being fetched).
build_image_from_host_binaries() { # IMAGE BASE_IMAGE BINARIES_IMAGE
  "$DOCKER" import -c 'CMD ["bash"]' "$(rootfs_tarball runtime "$RUNTIME_PACKAGES")" "$2" >/dev/null
  stage_host_binaries "$3"
  env DOCKER_BUILDKIT=1 "$DOCKER" build --build-arg "BINARIES=$3" --network none --build-arg "RUNTIME_IMAGE=$2" \
    -t "$1" "$ROOT" >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log" >&2; fail "docker build failed"; }
  check_image "$1"
}

# CurveZMQ keys for a run in $KEYS (roadsave keygen, $host_roadsave): the three services, a gateway for APPS, and a
# subscriber for every application (bookworm's libzmq 4.3.4 refuses keys limited to applications on the live
# socket), with allow.txt listing the five.
make_keys() { # APPS
  mkdir -p "$KEYS"
  for service in ingest detect notify; do
    "$host_roadsave" keygen "$service" --directory "$KEYS" --role service
  done >"$WORK/keygen.out"
  "$host_roadsave" keygen gateway --directory "$KEYS" --role gateway --apps "$1" >>"$WORK/keygen.out"
  "$host_roadsave" keygen subscriber --directory "$KEYS" --role subscriber >>"$WORK/keygen.out"
  sed -n 's/^allow-list line: //p' "$WORK/keygen.out" >"$KEYS/allow.txt"
  [ "$(wc -l <"$KEYS/allow.txt")" = 5 ] || fail "keygen printed $(wc -l <"$KEYS/allow.txt") allow-list lines, not 5"
}

# Waits until every event replay gives ($WORK/expected.ndjson) is in the notifier's store, once, as all_events
# (defined by the caller) prints them; fails after SECONDS.
check_events() { # LABEL SECONDS
  local deadline=$(($(date +%s) + $2)) verdict
  while :; do
    all_events >"$WORK/all.ndjson" 2>/dev/null || true
    verdict=$(python3 -c 'import collections, json, sys
want = collections.Counter(json.loads(l)["eventID"] for l in open(sys.argv[1]) if l.strip())
got = collections.Counter(json.loads(l)["eventID"] for l in open(sys.argv[2]) if l.strip())
print("ok" if want == got else "have %d of %d events, %d duplicates, %d unknown" % (
    len(set(got) & set(want)), len(want), sum(n - 1 for n in got.values() if n > 1), len(set(got) - set(want))))' \
      "$WORK/expected.ndjson" "$WORK/all.ndjson")
    [ "$verdict" = ok ] && { log "$1: the notifier holds replay's $(wc -l <"$WORK/expected.ndjson") events, each once"; return 0; }
    [ "$(date +%s)" -lt "$deadline" ] || fail "$1: $verdict"
    sleep 2
  done
}

# The end of a run's cleanup (the caller's cleanup function has removed what the run made): the dockerd this
# started, the scratch files, the verdict, and STATUS as the exit status.
end_run() { # STATUS
  stop_dockerd
  rm -rf "$WORK" "$CACHE/rootfs.$$" "$CACHE"/*.tar.tmp.$$
  [ "$1" = 0 ] && log "PASS" || log "FAILED (status $1)"
  exit "$1"
}

# A run's traps: the caller's cleanup at exit, an interruption exits 130, a failing command is logged with its line.
trap_run() {
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  trap 'log "FAIL: line $LINENO: $BASH_COMMAND"' ERR
}
