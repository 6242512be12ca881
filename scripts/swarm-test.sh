#!/usr/bin/env bash
# make swarm-test: deploy/swarm/stack.yml for real, on a Docker Swarm of three docker-in-docker nodes on this machine.
#
#  1. The tools and the engine, and the RoadSave image built offline as make container-test builds it
#     (scripts/container-lib.sh); a node image from debootstrap with docker.io, whose entrypoint makes the cgroup
#     mounts and /sys writable and starts dockerd preferring local images (no registry is reachable).
#  2. Three nodes on an internal network the test creates (no route out; nothing published on the host), each with
#     its own /var/lib/docker volume; `swarm init` on node-1 and both others joined as managers (three managers:
#     restarting one keeps a quorum). The image is moved into every node with `docker save | docker load`.
#  3. Keys by role (roadsave keygen) as Swarm secrets, node labels for the ingests (node-1, node-2) and the notifier
#     (node-1), then
#     `docker stack deploy --resolve-image never`. Waits for every task to run and answer /readyz.
#  4. A gateway container on node-3 sends a simulated fleet with a crash to the two ingests on node-1 and node-2
#     (roadsave send with both endpoints: each device to the ingest its hash picks). A subscriber on node-3 reads the
#     notifier's catch-up on node-1: every event `roadsave replay` gives for the same records, each once.
#  5. The drills, each ending with the same check: SIGKILL a detection task (Swarm restarts it, on whichever node it
#     picks); drain node-3, which holds nothing pinned (its detection shard moves to another node and is never killed
#     on the way: its health check is liveness; it starts from that node's volume of the slot: empty, it rebuilds
#     from the journals and is ready having read its whole shard; a store of an earlier life there, it resumes it;
#     either way ready with lag_positions 0 and no journal gap); restart a node container (node-2, which
#     holds ingest-2); scale ingest-1 to 0 and back while a second fleet is being sent (its gateway re-sends what
#     was not acknowledged; nothing acknowledged is lost).
#  6. Removes what it made, also on failure or interruption: the nodes and their volumes, the network, the images of
#     the run, the keys. It keeps .build/container (the debootstrap tarballs) and stops a dockerd it started.
#
# Root (apt-get, dockerd, debootstrap). Every wait is bounded. SWARM_TEST_KEEP=1 leaves everything in place.
set -Eeuo pipefail
# --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -Eeuo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; esac

cd "$(dirname "$0")/.."
ROOT=$PWD
NODE_PACKAGES="docker.io iptables iproute2 procps ca-certificates bash kmod"
APPS=stest-app,stest-app2

LOG_NAME=swarm-test
STEP_WIDTH=52

[ "$(id -u)" = 0 ] || { echo "swarm-test: needs root (apt-get, dockerd, debootstrap)" >&2; exit 1; }

RUN_ID=$(date +%Y%m%d%H%M%S)-$$
IMAGE=roadsave-stest:$RUN_ID
BASE_IMAGE=roadsave-stest-base:$RUN_ID
BINARIES_IMAGE=roadsave-stest-binaries:$RUN_ID
NODE_IMAGE=roadsave-stest-node:$RUN_ID
NETWORK=roadsave-stest-$RUN_ID
NODES=(stest-node-1-$RUN_ID stest-node-2-$RUN_ID stest-node-3-$RUN_ID)
WORK=$(mktemp -d /tmp/roadsave-stest.XXXXXX)
KEYS=$WORK/keys
# shellcheck source=scripts/container-lib.sh
. "$ROOT/scripts/container-lib.sh"

cleanup() {
  local status=$? node
  trap - EXIT INT TERM ERR
  set +e
  if [ "$status" != 0 ] && [ -n "${DEPLOYED:-}" ]; then
    log "tasks and the last log lines of each service:"
    node_exec 1 docker stack ps roadsave --no-trunc --format '{{.Name}} {{.Node}} {{.CurrentState}} {{.Error}}' >&2
    for service in ingest-1 ingest-2 detect notify; do
      node_exec 1 docker service logs --no-task-ids --tail 15 "roadsave_$service" >&2 2>&1
    done
  fi
  if [ "${SWARM_TEST_KEEP:-}" = 1 ]; then
    log "kept: nodes ${NODES[*]} (docker exec ${NODES[0]} docker stack ps roadsave), network $NETWORK, work $WORK"
    exit "$status"
  fi
  log "cleaning up"
  if "$DOCKER" info >/dev/null 2>&1; then
    for node in "${NODES[@]}"; do
      "$DOCKER" rm -f -v "$node" >/dev/null 2>&1
      "$DOCKER" volume rm "$node-docker" >/dev/null 2>&1
    done
    "$DOCKER" network rm "$NETWORK" >/dev/null 2>&1
    for image in "$IMAGE" "$BINARIES_IMAGE" "$BASE_IMAGE" "$NODE_IMAGE" "$NODE_IMAGE-base"; do
      "$DOCKER" image inspect "$image" >/dev/null 2>&1 && "$DOCKER" rmi "$image" >/dev/null
    done
  fi
  end_run "$status"
}
trap_run


# Runs a command in node N (1-based) with its own docker client.
node_exec() { local n=$1; shift; "$DOCKER" exec -i "${NODES[$((n - 1))]}" "$@"; }
node_ip() { "$DOCKER" inspect -f "{{(index .NetworkSettings.Networks \"$NETWORK\").IPAddress}}" "${NODES[$(($1 - 1))]}"; }
# Waits until COMMAND succeeds, at most SECONDS: "wait_for SECONDS WHAT COMMAND…".
wait_for() {
  local seconds=$1 what=$2 deadline=$(($(date +%s) + $1)); shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$what: not within $seconds s"
    sleep 1
  done
}
# A node's dockerd answers; if it does not in time, what it and the node said.
wait_node() { # N SECONDS
  local seconds=$2 deadline=$(($(date +%s) + $2))
  until node_exec "$1" docker info >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      "$DOCKER" logs --tail 20 "${NODES[$(($1 - 1))]}" >&2 2>&1
      "$DOCKER" exec "${NODES[$(($1 - 1))]}" tail -20 /var/log/dockerd.log >&2 2>&1
      fail "dockerd in node $1: not within $seconds s"
    fi
    sleep 1
  done
}

# ---- 1. tools, the images ----------------------------------------------------------------------------------------
step "tools, dockerd and the images"
tools_and_dockerd
build_image_from_host_binaries "$IMAGE" "$BASE_IMAGE" "$BINARIES_IMAGE"
"$DOCKER" import -c 'CMD ["bash"]' "$(rootfs_tarball node "$NODE_PACKAGES")" "$NODE_IMAGE-base" >/dev/null
mkdir -p "$WORK/node"
cat >"$WORK/node/entrypoint.sh" <<'EOF'
#!/bin/bash
# A Swarm node inside a container: the kernel's interfaces writable (the container is not --privileged, which this
# sandbox refuses), then dockerd preferring the images it has (no registry is reachable).
set -e
mount -o remount,rw /sys
# Each cgroup mount (v1: one a controller) as a bind remount: a plain remount of a read-only cgroup mount is refused
# as busy.
for mount in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do mount -o remount,rw,bind "$mount"; done
mountpoint -q /sys/fs/cgroup && mount -o remount,rw /sys/fs/cgroup
export DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1
exec dockerd --host unix:///var/run/docker.sock >/var/log/dockerd.log 2>&1
EOF
printf 'FROM %s\nCOPY entrypoint.sh /entrypoint.sh\nRUN chmod 0755 /entrypoint.sh\nENTRYPOINT ["/entrypoint.sh"]\n' \
  "$NODE_IMAGE-base" >"$WORK/node/Dockerfile"
env DOCKER_BUILDKIT=1 "$DOCKER" build --network none -t "$NODE_IMAGE" "$WORK/node" >"$WORK/node-build.log" 2>&1 \
  || { cat "$WORK/node-build.log" >&2; fail "the node image did not build"; }
step_done

# ---- 2. three nodes, one swarm ---------------------------------------------------------------------------------
step "three nodes, swarm init and joins, the image in each"
"$DOCKER" network create --internal "$NETWORK" >/dev/null
for i in 1 2 3; do
  node=${NODES[$((i - 1))]}
  "$DOCKER" run -d --name "$node" --hostname "node-$i" --network "$NETWORK" \
    --cap-add ALL --cap-drop SYS_RESOURCE --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --security-opt systempaths=unconfined --device-cgroup-rule 'a *:* rwm' \
    -v "$node-docker:/var/lib/docker" --tmpfs /run --tmpfs /tmp "$NODE_IMAGE" >/dev/null
done
for i in 1 2 3; do
  wait_node "$i" 60
done
"$DOCKER" save "$IMAGE" >"$WORK/image.tar"
for i in 1 2 3; do
  node_exec "$i" docker load <"$WORK/image.tar" >/dev/null
done
rm -f "$WORK/image.tar"
node_exec 1 docker swarm init --advertise-addr "$(node_ip 1)" >/dev/null
token=$(node_exec 1 docker swarm join-token -q manager)
for i in 2 3; do
  node_exec "$i" docker swarm join --token "$token" "$(node_ip 1):2377" >/dev/null
done
managers() { [ "$(node_exec 1 docker node ls --filter role=manager --format '{{.Status}} {{.ManagerStatus}}' | grep -c '^Ready')" = 3 ]; }
wait_for 60 "three managers ready" managers
node_exec 1 docker node update --label-add roadsave.ingest=1 node-1 >/dev/null
node_exec 1 docker node update --label-add roadsave.ingest=2 node-2 >/dev/null
# The notifier beside ingest-1: node-3 holds nothing pinned, so a detection shard there can be moved off it.
node_exec 1 docker node update --label-add roadsave.notify=1 node-1 >/dev/null
step_done

# ---- 3. keys as secrets, the stack ------------------------------------------------------------------------------
step "keys as secrets, docker stack deploy, every task ready"
make_keys "$APPS"
# The clients run as the image's user (uid 10001), which must own its secret keys (mode 0600: roadsave refuses a
# secret key others can read); the services get theirs as secrets, owned and moded by the stack file.
chown 10001:10001 "$KEYS"/* && chmod 0600 "$KEYS"/*.key && chmod 0644 "$KEYS"/*.pub "$KEYS/allow.txt"
secret() { node_exec 1 docker secret create "$1" - <"$2" >/dev/null; }
secret roadsave_ingest_key "$KEYS/ingest.key"
secret roadsave_detect_key "$KEYS/detect.key"
secret roadsave_notify_key "$KEYS/notify.key"
secret roadsave_ingest_public_key "$KEYS/ingest.key.pub"
secret roadsave_detect_public_key "$KEYS/detect.key.pub"
secret roadsave_allow_list "$KEYS/allow.txt"
# The clients' keys go to node-3, where the gateway and the subscriber run.
"$DOCKER" cp -a "$KEYS" "${NODES[2]}:/keys"
"$DOCKER" cp "$ROOT/deploy/swarm/stack.yml" "${NODES[0]}:/stack.yml"
node_exec 1 env ROADSAVE_IMAGE="$IMAGE" ROADSAVE_APPLICATIONS="$APPS" \
  docker stack deploy --resolve-image never -c /stack.yml roadsave >"$WORK/deploy.log" 2>&1 \
  || { cat "$WORK/deploy.log" >&2; fail "docker stack deploy failed"; }
DEPLOYED=1

# The running task of a service (its slot for detect) as "NODE CONTAINER".
task_of() { # SERVICE [SLOT]
  node_exec 1 docker service ps "roadsave_$1" --filter desired-state=running --no-trunc \
    --format '{{.Node}} {{.Name}}.{{.ID}} {{.CurrentState}}' | awk -v slot="${2:-}" '
      $3 == "Running" && (slot == "" || $2 ~ ("^roadsave_[a-z0-9-]+\\." slot "\\.")) { sub(/^node-/, "", $1); print $1, $2; exit }'
}
metrics_port() { case $1 in ingest-*) echo 9550 ;; detect) echo 9551 ;; notify) echo 9552 ;; esac; }
# GET PATH of a task's own metrics endpoint, from inside its container: the body, or failure on another status.
http_get() { # SERVICE SLOT PATH
  local where; where=$(task_of "$1" "$2"); [ -n "$where" ] || return 1
  node_exec "${where%% *}" docker exec "${where#* }" bash -c "exec 3<>/dev/tcp/127.0.0.1/$(metrics_port "$1") &&
    printf 'GET $3 HTTP/1.0\\r\\n\\r\\n' >&3 && read -r _ status _ <&3 && [ \"\$status\" = 200 ] && cat <&3"
}
ready() { http_get "$1" "${2:-}" /readyz; }
all_ready() { ready ingest-1 && ready ingest-2 && ready detect 1 && ready detect 2 && ready notify; }
wait_for 240 "every task running and ready" all_ready
step_done

# ---- 4. a fleet through two ingests, from node-3 ------------------------------------------------------------------
# What the services must give: `roadsave replay` of the same records.
SIMULATE1="simulate --devices 6 --crashes 1 --seed 11 --duration 10 --app stest-app"
SIMULATE2="simulate --devices 4 --crashes 1 --seed 12 --duration 10 --app stest-app2"
"$host_roadsave" $SIMULATE1 --output "$WORK/fleet1.ndjson" >/dev/null
"$host_roadsave" $SIMULATE2 --output "$WORK/fleet2.ndjson" >/dev/null
"$host_roadsave" replay "$WORK/fleet1.ndjson" 2>/dev/null >"$WORK/expected.ndjson"
client() { # ROADSAVE-ARGUMENTS…: roadsave in a container on node-3, on the node's own network, the keys at /keys
  node_exec 3 docker run --rm -i --network host -v /keys:/keys:ro "$IMAGE" roadsave "$@"
}
INGESTS=(--endpoint "tcp://$(node_ip 1):5550" --endpoint "tcp://$(node_ip 2):5550")
send() { # FILE [SEND-OPTION…]: the gateway on node-3, to both ingests
  local file=$1; shift
  node_exec 3 docker run --rm -i --network host -v /keys:/keys:ro "$IMAGE" bash -c \
    "cat >/tmp/fleet.ndjson && roadsave send /tmp/fleet.ndjson ${INGESTS[*]} --key /keys/gateway.key \
     --server-key /keys/ingest.key.pub --timeout 5 --attempts 30 $*" <"$file"
}
NOTIFIER="--endpoint tcp://$(node_ip 1):5554 --catch-up-endpoint tcp://$(node_ip 1):5555 --key /keys/subscriber.key --server-key /keys/notify.key.pub"

step "a fleet with a crash through both ingests from node-3; replay's events once at a subscriber"
summary=$(send "$WORK/fleet1.ndjson" | tail -1) || fail "the gateway's send failed: $summary"
sent=$(wc -l <"$WORK/fleet1.ndjson")
log "gateway: $summary"
[[ "$summary" =~ ^sent\ $sent,\ accepted\ $sent,\ rejected\ 0, ]] || fail "expected all $sent records accepted: $summary"
for i in 1 2; do
  where=$(task_of "ingest-$i")
  held=$(node_exec "${where%% *}" docker exec "${where#* }" sqlite3 /var/lib/roadsave/ingest/journal.sqlite \
    "SELECT coalesce(sum(records), 0) FROM chunks")
  log "ingest-$i's journal holds $held records"
  [ "$held" -gt 0 ] || fail "ingest-$i got no device: the gateway did not spread the fleet"
done

# The notifier's events, all of them (catch-up from position 0, then 2 s live): what check_events compares.
all_events() { client tail $NOTIFIER --since 0 --timeout 2 </dev/null; }
check_events "after the send" 180
crashes=$(python3 -c 'import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["event"] == "crashDetected"))' "$WORK/all.ndjson")
[ "$crashes" = 1 ] || fail "the subscriber saw $crashes crashes, replay gives 1"
step_done

# ---- 5. drills -----------------------------------------------------------------------------------------------
# The number of tasks a service has had (every restart or move is one more).
tasks() { node_exec 1 docker service ps "roadsave_$1" --format '{{.ID}}' | wc -l; }

step "drill: SIGKILL detection's slot 1; Swarm restarts it"
where=$(task_of detect 1)
before=$(tasks detect)
node_exec "${where%% *}" docker kill -s KILL "${where#* }" >/dev/null
restarted() { [ "$(task_of detect 1)" != "$where" ] && [ -n "$(task_of detect 1)" ] && ready detect 1; }
wait_for 120 "detection slot 1 restarted and ready" restarted
check_events "after SIGKILL" 120
step_done

step "drill: drain node-3 (nothing pinned there); its detection shard moves to a node's store"
# The scheduler spreads tasks over the nodes with fewest: node-3, with nothing pinned, gets a detection shard.
slot=$(node_exec 1 docker service ps roadsave_detect --filter desired-state=running --format '{{.Node}} {{.Name}}' \
  | awk '$1 == "node-3" { sub(/.*\./, "", $2); print $2; exit }')
[ -n "$slot" ] || fail "no detection shard runs on node-3: $(node_exec 1 docker service ps roadsave_detect --format '{{.Name}}@{{.Node}}')"
# Where Swarm sends the slot is its choice, and what the slot starts from is that node's volume of the slot: none
# where the slot never ran (it rebuilds from the journals), or the store of an earlier life there (the SIGKILL
# drill's restart may have moved the slot, so it may come back to where it first ran: it resumes that store).
declare -A earlier_store
for n in 1 2; do
  if node_exec "$n" docker volume inspect "roadsave-detect-data-$slot" >/dev/null 2>&1; then
    earlier_store[$n]=1
  else
    earlier_store[$n]=0
  fi
done
before=$(tasks detect)
node_exec 1 docker node update --availability drain node-3 >/dev/null
moved() { local w; w=$(task_of detect "$slot"); [ -n "$w" ] && [ "${w%% *}" != 3 ] && ready detect "$slot"; }
wait_for 240 "detection slot $slot moved off node-3 and ready" moved
# Moved once and never killed on the way: the slot's tasks grew by the move alone.
after=$(tasks detect)
[ "$after" = "$((before + 1))" ] || fail "detection had $((after - before)) new tasks during the move (a restart loop?)"
destination=$(task_of detect "$slot" | cut -d' ' -f1)
# Ready means read to the journals' heads lately; nothing is being sent now, so it has everything: lag 0, no gap.
metric() { awk -v name="$1" '$1 == name { print $2 }' <<<"$metrics"; }
caught_up() {
  metrics=$(http_get detect "$slot" /metrics) || return 1
  [ "$(metric roadsave_detection_lag_positions)" = 0 ]
}
wait_for 30 "detection slot $slot ready with lag_positions 0" caught_up
read_total=$(metric roadsave_detection_records_read_total)
gaps=$(metric roadsave_detection_journal_gaps_unacknowledged)
shard_total=0
for i in 1 2; do
  where=$(task_of "ingest-$i")
  held=$(node_exec "${where%% *}" docker exec "${where#* }" sqlite3 /var/lib/roadsave/ingest/journal.sqlite \
    "SELECT coalesce(sum(records), 0) FROM chunks WHERE shard = $((slot - 1))")
  shard_total=$((shard_total + held))
done
[ "${gaps%.*}" = 0 ] || fail "the moved shard reports $gaps unacknowledged journal gaps"
if [ "${earlier_store[$destination]}" = 1 ]; then
  # An earlier life's store: resumed from its checkpoint, so it read at most its shard (what followed the checkpoint).
  log "slot $slot moved to node-$destination, where it ran before: resumed that store, read ${read_total:-?} of its shard's $shard_total records since; lag 0, no gap"
  [ "${read_total%.*}" -le "$shard_total" ] \
    || fail "the shard resumed on node-$destination read ${read_total:-?} records, more than its shard's $shard_total"
else
  # An empty volume: rebuilt from the journals, every record of its shard read before it was ready.
  log "slot $slot moved to node-$destination, an empty volume: rebuilt, read ${read_total:-?} of its shard's $shard_total records; lag 0, no gap"
  [ "${read_total%.*}" = "$shard_total" ] \
    || fail "the shard rebuilt on node-$destination was ready having read ${read_total:-?} of its shard's $shard_total records"
fi
check_events "after the drain" 120
node_exec 1 docker node update --availability active node-3 >/dev/null
step_done

step "drill: restart the node container of ingest-2"
"$DOCKER" restart "${NODES[1]}" >/dev/null
wait_node 2 90
wait_for 240 "every task running and ready after node-2's restart" all_ready
check_events "after node-2's restart" 120
step_done

step "drill: ingest-1 scaled to 0 and back while a second fleet is sent"
"$host_roadsave" replay "$WORK/fleet2.ndjson" 2>/dev/null >>"$WORK/expected.ndjson"
# Paced (about 12 s of sending), so that the outage falls inside the send; its log counts the batches sent again.
send "$WORK/fleet2.ndjson" --rate 200 --log-level info >"$WORK/send2.out" 2>"$WORK/send2.err" &
sender=$!
node_exec 1 docker service scale -d roadsave_ingest-1=0 >/dev/null
gone() { [ -z "$(task_of ingest-1)" ]; }
wait_for 60 "ingest-1 stopped" gone
kill -0 "$sender" 2>/dev/null || fail "the second send was over before ingest-1 stopped: no outage to go through"
node_exec 1 docker service scale -d roadsave_ingest-1=1 >/dev/null
wait_for 120 "ingest-1 back and ready" ready ingest-1
wait "$sender" || { cat "$WORK/send2.out" "$WORK/send2.err" >&2; fail "the second send failed"; }
summary=$(tail -1 "$WORK/send2.out")
sent=$(wc -l <"$WORK/fleet2.ndjson")
resent=$(grep -o 'msg=finished.* resent=[0-9]*' "$WORK/send2.err" | grep -o 'resent=[0-9]*' | head -1)
log "gateway: $summary ($resent)"
[[ "$summary" =~ ^sent\ $sent,\ accepted\ $sent,\ rejected\ 0, ]] || fail "expected all $sent records accepted: $summary"
check_events "after ingest-1's scale to 0 and back" 180
step_done

# What the three nodes hold in memory at the end (their containers' cgroups: dockerd, the tasks, page cache).
memory=$("$DOCKER" stats --no-stream --format '{{.MemUsage}}' "${NODES[@]}" | awk '{ print $1 }' | tr '\n' ' ')
log "memory of the nodes: $memory"

log "times:"
for line in "${TIMES[@]}"; do log "  $line"; done
