#!/usr/bin/env python3
"""The services benchmark behind `make bench`: records a second through sensor-ingest (journal on, fsync'd),
detection and the notifier to a subscriber, as users run them (`roadsave up --keys`: CurveZMQ on every socket),
beside a bare acknowledging server fed by the same client in the same run; the crash alert latency under load; and
detection's throughput with one and two shards.

  python3 scripts/bench_services.py [--bin .build/release] [--records 2000000] [--devices 2000] [--batch 1000]
                                    [--window 16] [--client auto|send|python] [--probes 60] [--no-keys]
                                    [--json FILE]

Prints (and with --json writes as a list of figures, see docs/benchmarks.md):
  - clients:   the bare path fed by `roadsave send` (MessagePack file, --window batches in flight) and by the Python
               flood gateway (Tests/IntegrationTests/Support/flood_gateway.py): the faster one feeds both paths;
  - bare:      records a second acknowledged by `roadsave-bench ack-server` (receive, unpack and validate with
               msgpack-c, acknowledge; nothing stored), with keys as the services have them;
  - services:  records a second acknowledged by sensor-ingest, and end to end (until detection has applied the whole
               journal, the notifier has stored all of detection's events and the subscriber has received them), each
               with its ratio to bare;
  - latency:   while `roadsave send --rate` loads the services at half the measured end-to-end capacity, probe devices
               each send a crash (drive, a 45 g impact, standing still): first the records up to 10 s after the impact,
               then those that let detection decide; the time from that second batch's acknowledgement to the
               crashDetected event at a SUB subscriber, p50 and p99 (embedded platform); beside them, the disk's
               own stalls (a 4 KiB fdatasync every 20 ms, timed) and the p99 of the probes that met none;
  - restart:   detection SIGKILLed in the middle of a flood (up restarts it): seconds from its restart to "caught up
               with the journals";
  - shards:    detection alone catching up from empty stores, as a shard moved to another node rebuilds: for 1, 2
               and 3 shards, a journal of as many shards filled first and as many processes; records a second,
               records per CPU-second a shard, the coordination overhead (all shards' CPU against one process's)
               and the seconds a million journal records take to re-read (--only-shards: this alone);
  - cpu:       CPU microseconds a record of each process (/proc and the children's rusage), on the bare path (client
               and ack-server) and on the services path (client, ingest, detection, notifier, until end to end): what
               the services add to the bare path's work, which bounds their ratio to it on these two cores;
  - memory:    peak and final resident memory of each service.
Figures, not assertions: the machine is shared, so compare the ratios. The generated record files are kept in
$TMPDIR/roadsave-bench-cache for the next run.
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import msgpack
import zmq
import zmq.auth

from benchkit import (TimedSyncs, children_cpu_seconds, cpu_seconds, detection_applied, free_base_port, free_ports,
                      load_average, memory, query, wait_listening)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOOD = os.path.join(ROOT, "Tests", "IntegrationTests", "Support", "flood_gateway.py")
FIXTURE = os.path.join(ROOT, "Tests", "CLITests", "Fixtures", "morning.ndjson")
START_T = 1_780_000_000.0
MiB = 1024 * 1024








# MARK: Input

def generate(path, devices, first_round, rounds, prefix="flood"):
    """Records of `devices` devices for rounds [first_round, first_round + rounds): each driving at 14 m/s along a
    line, one record a second of event time (an automotive activity every 30), devices interleaved as a gateway
    that serves them all would send them; concatenated MessagePack maps (what `roadsave send` reads as .msgpack)."""
    packer = msgpack.Packer(use_bin_type=True)
    metres_per_degree = 111_320.0 * math.cos(math.radians(-33.9))
    temporary = path + ".part"
    with open(temporary, "wb") as out:
        chunk = []
        for n in range(first_round, first_round + rounds):
            t = START_T + n
            lon = 18.4 + (n * 14.0) / metres_per_degree
            for device in range(devices):
                user = "%s-%05d" % (prefix, device)
                if n % 30 == 0:
                    record = {"kind": "activity", "app": "demo-app", "user": user, "seq": n, "t": t,
                              "activity": "automotive", "confidence": "high"}
                else:
                    record = {"kind": "location", "app": "demo-app", "user": user, "seq": n, "t": t,
                              "lat": -33.9 + device * 0.001, "lon": lon, "speed": 14.0, "hacc": 5.0}
                chunk.append(packer.pack(record))
            if len(chunk) >= 20000:
                out.write(b"".join(chunk))
                chunk = []
        out.write(b"".join(chunk))
    os.rename(temporary, path)


def input_file(options, name, first, rounds):
    """Records of rounds [first, first + rounds) of every device, generated once and cached: (path, records)."""
    cache = os.path.join(tempfile.gettempdir(), "roadsave-bench-cache")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, "%s-%d-%d-%d.msgpack" % (name, options.devices, first, rounds))
    if not os.path.exists(path):
        started = time.monotonic()
        generate(path, options.devices, first, rounds)
        print("generated %s (%d records) in %.1f s" % (path, rounds * options.devices, time.monotonic() - started),
              file=sys.stderr)
    return path, rounds * options.devices


def input_files(options):
    """The main flood; the half-load background and the restart flood follow it in event time, once the rate the
    background must hold is known (`later_files`)."""
    return {"main": input_file(options, "main", 0, max(1, options.records // options.devices))}


def later_files(options, files, rate, probes, spacing):
    """The background, long enough at `rate` to outlast the probes with a margin (its end is a stream's end, which
    releases every device of it at once: thousands of events that would queue before a probe's alert), in rounds of
    500 so that runs at similar rates share the cache; then the restart flood after it."""
    main_rounds = files["main"][1] // options.devices
    seconds = 2 + probes * (spacing + 0.1) + 5
    rounds = max(main_rounds, int(math.ceil(rate * seconds / options.devices / 500.0)) * 500)
    files["background"] = input_file(options, "background", main_rounds, rounds)
    files["restart"] = input_file(options, "restart", main_rounds + rounds, max(1, main_rounds // 2))


# MARK: Clients

class Keys:
    """Client and server key files (roadsave keygen / up --keys), or none."""
    def __init__(self, client=None, server=None):
        self.client = client
        self.server = server

    def send_flags(self):
        return ["--key", self.client, "--server-key", self.server] if self.client else []


def run_send(binaries, endpoint, path, options, keys, rate=None, background=False):
    command = [os.path.join(binaries, "roadsave"), "send", path, "--endpoint", endpoint, "--batch", str(options.batch),
               "--window", str(options.window)] + keys.send_flags()
    if rate:
        command += ["--rate", str(int(rate))]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if background:
        return process
    out, err = process.communicate()
    seconds = time.monotonic() - started
    match = re.search(r"accepted (\d+)", out)
    if process.returncode != 0 or not match:
        raise RuntimeError("roadsave send failed (%s): %s %s" % (process.returncode, out, err[-2000:]))
    accepted = int(match.group(1))
    return {"acknowledged": accepted, "seconds": seconds, "rate": accepted / seconds}


def run_flood(endpoint, options, keys, seconds):
    command = [sys.executable, FLOOD, "--endpoint", endpoint, "--devices", str(options.devices), "--seconds",
               str(seconds), "--batch", str(options.batch), "--window", str(options.window)]
    if keys.client:
        command += ["--key", keys.client, "--server-key", keys.server]
    out = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return lines[-1]


def run_client(kind, binaries, endpoint, path_records, options, keys):
    if kind == "send":
        return run_send(binaries, endpoint, path_records[0], options, keys)
    return run_flood(endpoint, options, keys, options.flood_seconds)


class Subscriber(threading.Thread):
    """A SUB on the notifier's live socket: every event, with its position; crashDetected arrival times by user."""
    def __init__(self, endpoint, keys):
        super().__init__(daemon=True)
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 100000)
        if keys.client:
            public, secret = zmq.auth.load_certificate(keys.client)
            server, _ = zmq.auth.load_certificate(keys.server)
            self.socket.curve_publickey, self.socket.curve_secretkey, self.socket.curve_serverkey = public, secret, server
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.socket.connect(endpoint)
        self.last_position = 0
        self.events = 0
        self.crashes = {}
        self.running = True

    def run(self):
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        while self.running:
            if not dict(poller.poll(100)).get(self.socket):
                continue
            while True:
                try:
                    frames = self.socket.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                now = time.monotonic()
                self.events += 1
                if len(frames) >= 3:
                    self.last_position = max(self.last_position, int(frames[2]))
                topic = frames[0].decode()
                if topic.startswith("crashDetected."):
                    user = topic.split(".", 2)[2]
                    self.crashes.setdefault(user, now)

    def stop(self):
        self.running = False
        self.join(2)
        self.socket.close()


# MARK: The services under `roadsave up --keys`

class Up:
    def __init__(self, binaries, directory, keys_on, metrics=False, environment=None, extra=()):
        """`environment`: variables added to the services' (scripts/bench_counters.py preloads its allocation
        counter with them); `extra`: more options of `roadsave up` (--webhooks URL)."""
        self.binaries = binaries
        self.directory = directory
        self.base = free_base_port(13 if metrics else 6)
        self.endpoint = {name: "tcp://127.0.0.1:%d" % (self.base + offset) for offset, name in
                         enumerate(["gateway", "records", "control", "events", "publish", "catchup"])}
        command = [os.path.join(binaries, "roadsave"), "up", "--data-dir", os.path.join(directory, "up"),
                   "--base-port", str(self.base), "--log-level", "info"]
        if keys_on:
            command.append("--keys")
        if metrics:
            # The three metrics endpoints at P+10..P+12 (free_base_port checked them free).
            command += ["--metrics-port", str(self.base + 10)]
        command += list(extra)
        self.metrics_port = self.base + 10 if metrics else None
        environment = dict(os.environ, ROADSAVE_APPLICATIONS="demo-app", **(environment or {}))
        self.log_path = os.path.join(directory, "up.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, env=environment, text=True)
        self.pids = {}
        self.lines = []
        self.subscriber_missed = 0
        ready = False
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            match = re.match(r"(?:re)?started (\w+) pid (\d+)", line)
            if match:
                self.pids[match.group(1)] = int(match.group(2))
            if line.strip() == "ready":
                ready = True
                break
        if not ready:
            raise RuntimeError("roadsave up did not get ready: %s" % "".join(self.lines))
        threading.Thread(target=self._follow, daemon=True).start()
        keys = os.path.join(directory, "up", "keys")
        self.keys_dir = keys if keys_on else None
        self.gateway = Keys(os.path.join(keys, "gateway.key"), os.path.join(keys, "ingest.key.pub")) if keys_on else Keys()
        self.subscriber = Keys(os.path.join(keys, "subscriber.key"), os.path.join(keys, "notify.key.pub")) if keys_on else Keys()

    def _follow(self):
        for line in self.process.stdout:
            self.lines.append(line)
            match = re.match(r"(?:re)?started (\w+) pid (\d+)", line)
            if match:
                self.pids[match.group(1)] = int(match.group(2))

    def database(self, name, file):
        return os.path.join(self.directory, "up", name, file)

    def crash_stored(self, user):
        """Whether the notifier stored a crashDetected event of `user` (None when its store cannot be read)."""
        count = query(self.database("notify", "notifier.sqlite"),
                      "SELECT count(*) FROM events WHERE name = 'crashDetected' AND user = ?", (user,))
        return None if count is None else count > 0

    def journal_head(self):
        return query(self.database("ingest", "journal.sqlite"), "SELECT seq FROM sqlite_sequence WHERE name = 'chunks'") or 0

    def detection_applied(self):
        return detection_applied(self.database("detect", "detection.sqlite"))

    def outbox_head(self):
        return query(self.database("detect", "outbox.sqlite"), "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") or 0

    def notifier_upstream(self):
        return query(self.database("notify", "notifier.sqlite"), "SELECT max(position) FROM upstream") or 0

    def notifier_head(self):
        return query(self.database("notify", "notifier.sqlite"), "SELECT seq FROM sqlite_sequence WHERE name = 'events'") or 0

    def wait_end_to_end(self, subscriber, timeout=300):
        """Seconds until detection applied the journal's head, the notifier stored detection's outbox head and the
        subscriber saw the notifier's newest event."""
        start = time.monotonic()
        head = self.journal_head()
        seen, moved = subscriber.last_position, start
        while time.monotonic() - start < timeout:
            now = time.monotonic()
            if subscriber.last_position != seen:
                seen, moved = subscriber.last_position, now
            if self.detection_applied() >= head:
                outbox = self.outbox_head()
                if self.notifier_upstream() >= outbox:
                    newest = self.notifier_head()
                    if subscriber.last_position >= newest:
                        return now - start
                    if now - moved > 5:
                        # The live socket drops what a subscriber does not take in time (it would catch up by
                        # position): counted, and the wait ends with the last event it did get.
                        self.subscriber_missed = newest - subscriber.last_position
                        return moved - start
            time.sleep(0.02)
        return None

    def caught_up_lines(self):
        with open(self.log_path) as handle:
            return re.findall(r'category=detection msg="caught up with the journals" seconds=([0-9.]+)', handle.read())

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


# MARK: Crash alert latency

def probe_records(user, impact_at):
    """The fixture's crash (Tests/CLITests/Fixtures/morning.ndjson, user-crash: 3 minutes at 15 m/s, a 45 g impact,
    standing still) for `user`, shifted so that the impact is at `impact_at`; split into the records up to 10 s after
    the impact (no decision possible yet) and the rest (the first of them past the decision time lets detection
    decide, once the reorder window has passed it)."""
    records = []
    with open(FIXTURE) as handle:
        for line in handle:
            if '"user":"user-crash"' in line:
                records.append(json.loads(line))
    impact = next(r["t"] for r in records if r["kind"] == "impact")
    first, decide = [], []
    for record in records:
        record = dict(record, user=user, t=record["t"] - impact + impact_at)
        (first if record["t"] < impact_at + 10 else decide).append(record)
    return first, decide


def measure_latency(endpoint, keys, subscriber, probes, spacing, background, strict=True):
    """Sends each probe's two batches (waiting for each acknowledgement) and returns the latencies in ms from the
    second acknowledgement to the crashDetected event, and the probes without one after the ack: `beforeAck` (the
    alert was read first: ingest sends the batch on to detection as it acknowledges it, and this process's two
    threads read the ack and the alert in whichever order the interpreter runs them) and
    `notSeenLive` (none reached the subscriber; the caller looks for it in the notifier's store).
    If the `background` load ended before the last probe the figure is not at that load: an error when `strict`,
    else a warning (`--check` judges no speed, and how long the background lasts depends on the machine's)."""
    context = zmq.Context.instance()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    if keys.client:
        public, secret = zmq.auth.load_certificate(keys.client)
        server, _ = zmq.auth.load_certificate(keys.server)
        dealer.curve_publickey, dealer.curve_secretkey, dealer.curve_serverkey = public, secret, server
    dealer.connect(endpoint)

    def send_and_ack(batch_id, records):
        dealer.send_multipart([batch_id, b"application/msgpack", msgpack.packb(records, use_bin_type=True)])
        if not dealer.poll(30000):
            raise RuntimeError("probe batch %s not acknowledged" % batch_id)
        frames = dealer.recv_multipart()
        acknowledged = time.monotonic()
        ack = msgpack.unpackb(frames[1], raw=False)
        if ack.get("accepted") != len(records):
            raise RuntimeError("probe batch %s: %s" % (batch_id, ack))
        return acknowledged

    acked = {}
    ended_early = False
    run = "%x" % int(time.time())
    for index in range(probes):
        user = "probe-%s-%03d" % (run, index)
        first, decide = probe_records(user, time.time() - 120)
        send_and_ack(("%s-a" % user).encode(), first)
        time.sleep(spacing)
        acked[user] = send_and_ack(("%s-b" % user).encode(), decide)
        if background.poll() is not None and index + 1 < probes and not ended_early:
            ended_early = True
            if strict:
                raise RuntimeError("the background load ended after %d of %d probes" % (index + 1, probes))
            print("warning: the background load ended after %d of %d probes" % (index + 1, probes), file=sys.stderr)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(user not in subscriber.crashes for user in acked):
        time.sleep(0.05)
    dealer.close()
    missing = {"beforeAck": [], "notSeenLive": []}
    timed = []
    for user, at in acked.items():
        seen = subscriber.crashes.get(user)
        if seen is None:
            missing["notSeenLive"].append(user)
        elif seen < at:
            missing["beforeAck"].append(user)
        else:
            timed.append((at, seen))
    return timed, missing


def disk_canary(directory):
    """A 4 KiB write and `fdatasync` every 20 ms in `directory`, each timed (`TimedSyncs`): what the disk itself does
    to a sync while the probes run. A crash alert waits for two fsyncs after its acknowledgement (detection's outbox,
    the notifier's store), and a virtual disk that stalls every sync on it for tens of milliseconds now and then
    stalls those too, whatever the services do; the probes that met such a stall are told apart, so that a tail the
    disk made is not read as one the code made."""
    return TimedSyncs(directory, size=4096, interval=0.02, wrap=1 << 20)


# A canary sync slower than this is a disk stall: alone it takes the whole of the alert's p99 target (20 ms).
DISK_STALL = 0.020


# A stall still delays the alerts of probes acknowledged after it ended: the gateways' batches it held up reach
# detection as one burst, ahead of the probes' records, and at half load detection has about the load's rate to
# spare, so the burst takes about as long as the stall to clear; at least this long (a tenth of a second at half
# load is some 20,000 records, 20-30 ms of detection's work).
STALL_REACH = 0.1


def split_by_stalls(timed, stalls):
    """The probes' latencies (ms, sorted), and those of the probes that met none of `stalls` (ms, sorted): no
    stall overlapped the time from the probe's acknowledgement to its alert, or ended less than its own length (at
    least `STALL_REACH`) before the acknowledgement."""
    latencies = sorted((seen - at) * 1000 for at, seen in timed)
    clear = sorted((seen - at) * 1000 for at, seen in timed
                   if not any(start < seen and end + max(STALL_REACH, end - start) > at for start, end in stalls))
    return latencies, clear


def percentile(values, fraction):
    if not values:
        return float("nan")
    index = min(len(values) - 1, max(0, int(math.ceil(fraction * len(values))) - 1))
    return values[index]


PROBE_SPACING = 0.3

# MARK: Detection shards

def detection_shards(binaries, tools, directory, main_file, options, keys_dir, counts=(1, 2, 3)):
    """For each shard count N: fills a fresh ingest journal with --shards N from the main file, then times N
    detection processes (--shard 0/N … N-1/N) catching up with it from empty stores, as a shard moved to another
    node rebuilds. Per N: records a second (wall), each process's CPU seconds and records per CPU-second, and the
    coordination overhead (all shards' CPU against one process's for the same records)."""
    environment = dict(os.environ, ROADSAVE_APPLICATIONS="demo-app", ROADSAVE_LOG_LEVEL="warning")
    curve = lambda name: (["--curve-secret-key", os.path.join(keys_dir, name + ".key"),
                           "--allow", os.path.join(keys_dir, "allow.txt")] if keys_dir else [])
    log = open(os.path.join(directory, "shards.log"), "a")
    results = {}
    try:
        for count in counts:
            gateway, records = ["tcp://127.0.0.1:%d" % port for port in free_ports(2)]
            ingest_dir = os.path.join(directory, "shards-ingest-%d" % count)
            ingest = subprocess.Popen([os.path.join(binaries, "roadsave-ingest"), "--gateway-endpoint", gateway,
                                       "--records-endpoint", records, "--shards", str(count), "--data-dir", ingest_dir]
                                      + curve("ingest"), stdout=log, stderr=log, env=environment)
            try:
                wait_listening([gateway, records])
                keys = Keys(os.path.join(keys_dir, "gateway.key"), os.path.join(keys_dir, "ingest.key.pub")) if keys_dir else Keys()
                loaded = run_send(tools, gateway, main_file[0], options, keys)
                journal = os.path.join(ingest_dir, "journal.sqlite")
                # Caught up: each process has applied its shard's last chunk (positions are shared by the shards).
                last = [query(journal, "SELECT max(position) FROM chunks WHERE shard = %d" % index) or 0 for index in range(count)]
                held = [query(journal, "SELECT coalesce(sum(records), 0) FROM chunks WHERE shard = %d" % index) or 0
                        for index in range(count)]
                processes, stores = [], []
                started = time.monotonic()
                for index in range(count):
                    control, events = ["tcp://127.0.0.1:%d" % port for port in free_ports(2)]
                    data = os.path.join(directory, "shards-detect-%dof%d" % (index, count))
                    command = [os.path.join(binaries, "roadsave-detect"), "--records-endpoint", records,
                               "--control-endpoint", control, "--events-endpoint", events, "--data-dir", data,
                               "--shard", "%d/%d" % (index, count)]
                    if keys_dir:
                        command += curve("detect") + ["--curve-server-key", os.path.join(keys_dir, "ingest.key.pub")]
                    processes.append(subprocess.Popen(command, stdout=log, stderr=log, env=environment))
                    stores.append(os.path.join(data, "detection.sqlite"))
                seconds, finished, cpu = None, [None] * count, [None] * count
                while time.monotonic() - started < 600 and None in finished:
                    for index, store in enumerate(stores):
                        if finished[index] is None and detection_applied(store) >= last[index]:
                            finished[index] = time.monotonic() - started
                            cpu[index] = cpu_seconds(processes[index].pid)
                    time.sleep(0.05)
                if None not in finished:
                    seconds = max(finished)
                peak = [memory(process.pid).get("VmHWM", 0) / MiB for process in processes]
                for process in processes:
                    process.send_signal(signal.SIGTERM)
                for process in processes:
                    try:
                        process.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        process.kill()
                total_cpu = sum(c for c in cpu if c is not None) if None not in cpu else None
                results[str(count)] = {
                    "seconds": seconds, "records": loaded["acknowledged"],
                    "rate": loaded["acknowledged"] / seconds if seconds else float("nan"),
                    "cpuSeconds": cpu, "shardRecords": held, "shardSeconds": finished,
                    "recordsPerCpuSecond": [h / c if c else float("nan") for h, c in zip(held, cpu)] if None not in cpu else None,
                    "totalCpuSeconds": total_cpu, "memory": peak}
            finally:
                ingest.send_signal(signal.SIGTERM)
                try:
                    ingest.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    ingest.kill()
        one = results.get("1", {}).get("totalCpuSeconds")
        for result in results.values():
            total = result["totalCpuSeconds"]
            result["overhead"] = total / one - 1 if one and total else float("nan")
        return results
    finally:
        log.close()


def service_keys(tools, directory):
    """CurveZMQ keys as `roadsave up --keys` makes them (ingest, detect, a gateway) and their allow list."""
    os.makedirs(directory, exist_ok=True)
    lines = []
    for name, role in [("ingest", "service"), ("detect", "service"), ("gateway", "gateway")]:
        command = [os.path.join(tools, "roadsave"), "keygen", name, "--directory", directory, "--role", role]
        if role == "gateway":
            command += ["--apps", "demo-app"]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        lines += [line.split("allow-list line: ", 1)[1] for line in out.splitlines() if line.startswith("allow-list line: ")]
    with open(os.path.join(directory, "allow.txt"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return directory


def add_shard_figures(figure, shards):
    """The shards' figures: records a second for each count against one process, and records per CPU-second."""
    one = shards.get("1", {}).get("rate")
    for count, result in sorted(shards.items(), key=lambda item: int(item[0])):
        name = "detection %s shard%s" % (count, "" if count == "1" else "s")
        if count == "1":
            figure(name, result["rate"], "records/s", stage="shards")
        else:
            figure(name, result["rate"], "records/s", "detection 1 shard", one, "reported", stage="shards")
        per_cpu = result["recordsPerCpuSecond"]
        if per_cpu:
            figure(name + ", records per CPU-second a shard", min(per_cpu), "records/CPU-s", stage="shards")
        figure(name + ", coordination overhead", result["overhead"], "ratio", stage="shards")


def print_shards(shards, records):
    """The shards' lines of the report."""
    for count, result in sorted(shards.items(), key=lambda item: int(item[0])):
        per_cpu = result["recordsPerCpuSecond"] or []
        print("shards    %s detection process%s catching up from empty stores (%d records): %8.0f records/s wall, "
              "%s records per CPU-second a shard, CPU %s s in all (coordination overhead %+.0f %%); rebuilding a "
              "moved shard takes %.1f s a million journal records"
              % (count, "" if count == "1" else "es", records, result["rate"],
                 "/".join("%.0f" % value for value in per_cpu) or "?",
                 "%.2f" % result["totalCpuSeconds"] if result["totalCpuSeconds"] else "?",
                 100 * result["overhead"] if result["overhead"] == result["overhead"] else float("nan"),
                 max(s for s in result["shardSeconds"] if s is not None) * 1e6 / records
                 if result["seconds"] else float("nan")))


# MARK: Main

def build_name(binaries):
    """What the figures are of: a debug build's are no speed to quote. Asked of the build itself (`roadsave-bench
    build`), so that a build copied elsewhere to compare with is named for what it is; by its folder's name where
    that build cannot say (one made before the subcommand)."""
    try:
        answer = subprocess.run([os.path.join(binaries, "roadsave-bench"), "build"], capture_output=True, text=True,
                                timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        answer = ""
    if answer not in ("debug", "release"):
        answer = "release" if "release" in binaries else "debug"
    return "release build" if answer == "release" else "debug build: figures for the check only"


def main():
    parser = argparse.ArgumentParser(description="records a second through the services, against a bare server")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--client-bin", default=None,
                        help="where roadsave (send, keygen) and roadsave-bench (ack-server) come from (default --bin): "
                             "to measure older services with today's client")
    parser.add_argument("--records", type=int, default=2_000_000, help="records of the main flood")
    parser.add_argument("--devices", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--client", choices=["auto", "send", "python"], default="auto")
    parser.add_argument("--flood-seconds", type=float, default=6, help="seconds of each Python flood")
    parser.add_argument("--probes", type=int, default=60, help="crash probes of the latency figure")
    parser.add_argument("--no-keys", action="store_true", help="plaintext sockets (default: CurveZMQ, as up --keys)")
    parser.add_argument("--metrics", action="store_true",
                        help="run the services with their /metrics endpoints on (up --metrics-port), to see their cost")
    parser.add_argument("--skip-shards", action="store_true")
    parser.add_argument("--only-shards", action="store_true",
                        help="only detection catching up with 1, 2 and 3 shards (each on a journal of as many shards)")
    parser.add_argument("--skip-restart", action="store_true")
    parser.add_argument("--json", default=None, help="write the figures to this file")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless every figure was measured (a number, never a speed judged): "
                             "`make test` runs a short flood with it so that the benchmark cannot rot unseen")
    # Kept for older callers: the Python flood's length.
    parser.add_argument("--seconds", type=float, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.seconds:
        options.flood_seconds = options.seconds
    keys_on = not options.no_keys
    binaries = os.path.abspath(options.bin)
    tools = os.path.abspath(options.client_bin or options.bin)
    files = input_files(options)
    directory = tempfile.mkdtemp(prefix="roadsave-bench-")
    figures = []
    loads = {}
    started = []

    def number(value):
        return None if value is None or value != value else round(float(value), 3)

    def figure(name, value, unit, baseline=None, baseline_value=None, target=None, stage=None):
        figures.append({"figure": name, "value": number(value), "unit": unit, "baseline": baseline,
                        "baselineValue": number(baseline_value), "target": target, "load": loads.get(stage)})

    try:
        if options.only_shards:
            keys_dir = service_keys(tools, os.path.join(directory, "shard-keys")) if keys_on else None
            shards = detection_shards(binaries, tools, directory, files["main"], options, keys_dir)
            loads["shards"] = load_average()
            print("shards benchmark: %d devices, %s (%s)" % (options.devices, "keys" if keys_on else "no keys",
                                                             build_name(binaries)))
            print_shards(shards, files["main"][1])
            add_shard_figures(figure, shards)
            print("load      1-minute load average after the shards: %.1f" % (loads["shards"] or float("nan")))
            if options.json:
                with open(options.json, "w") as handle:
                    json.dump({"figures": figures, "shards": shards}, handle, indent=2)
            return
        # Keys for the bare server and its gateway (the services make their own under up --keys).
        bare_keys = Keys()
        if keys_on:
            keys_dir = os.path.join(directory, "bare-keys")
            for name in ["bare", "gateway"]:
                subprocess.run([os.path.join(tools, "roadsave"), "keygen", name, "--directory", keys_dir],
                               stdout=subprocess.DEVNULL, check=True)
            bare_keys = Keys(os.path.join(keys_dir, "gateway.key"), os.path.join(keys_dir, "bare.key.pub"))

        # Baseline: the bare acknowledging server, fed by each client; the faster feeds both paths.
        port = free_ports(1)[0]
        bare_endpoint = "tcp://127.0.0.1:%d" % port
        command = [os.path.join(tools, "roadsave-bench"), "ack-server", bare_endpoint]
        if keys_on:
            command += ["--curve-secret-key", os.path.join(directory, "bare-keys", "bare.key")]
        bare = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(bare)
        wait_listening([bare_endpoint])
        clients = {}
        # CPU a record (µs): where each path's time goes, and how much the services add to the bare path's work.
        cpu = {}

        def measured_client(name, run):
            before_children, before_bare = children_cpu_seconds(), cpu_seconds(bare.pid)
            result = run()
            cpu[name] = {"client": children_cpu_seconds() - before_children, "bare": cpu_seconds(bare.pid) - before_bare,
                         "records": result["acknowledged"]}
            return result

        if options.client in ("auto", "send"):
            clients["send"] = measured_client("send", lambda: run_send(tools, bare_endpoint, files["main"][0], options, bare_keys))
        if options.client in ("auto", "python"):
            clients["python"] = measured_client("python", lambda: run_flood(bare_endpoint, options, bare_keys,
                                                                           options.flood_seconds))
        bare.kill()
        bare.wait()
        loads["bare"] = load_average()
        client = max(clients, key=lambda name: clients[name]["rate"])
        baseline = clients[client]

        # The services, as `roadsave up --keys` runs them.
        up = Up(binaries, directory, keys_on, metrics=options.metrics)
        started.append(up.process)
        subscriber = Subscriber(up.endpoint["publish"], up.subscriber)
        subscriber.start()
        time.sleep(0.5)
        services_before = {name: cpu_seconds(pid) for name, pid in up.pids.items()}
        client_before = children_cpu_seconds()
        run = run_client(client, tools, up.endpoint["gateway"], files["main"], options, up.gateway)
        client_seconds = children_cpu_seconds() - client_before
        end_to_end_wait = up.wait_end_to_end(subscriber)
        services_cpu = {name: (cpu_seconds(pid) or 0) - (services_before.get(name) or 0) for name, pid in up.pids.items()}
        loads["services"] = load_average()
        peak = {name: {k: v / MiB for k, v in memory(pid).items()} for name, pid in up.pids.items()}
        end_to_end = run["acknowledged"] / (run["seconds"] + (end_to_end_wait if end_to_end_wait is not None else float("nan")))

        # Crash alert latency at half the end-to-end capacity.
        half = max(1000.0, end_to_end / 2) if end_to_end == end_to_end else 1000.0
        later_files(options, files, half, options.probes, PROBE_SPACING)
        background = run_send(tools, up.endpoint["gateway"], files["background"][0], options, up.gateway,
                              rate=half, background=True)
        time.sleep(2)
        canary = disk_canary(up.directory)
        canary.start()
        try:
            timed, missing = measure_latency(up.endpoint["gateway"], up.gateway, subscriber, options.probes,
                                             PROBE_SPACING, background, strict=not options.check)
        finally:
            canary.stop()
        stalls = canary.stalls(DISK_STALL)
        latencies, clear_latencies = split_by_stalls(timed, stalls)
        background.send_signal(signal.SIGTERM)
        background.wait()
        loads["latency"] = load_average()
        lag_after_probes = up.journal_head() - up.detection_applied()
        up.wait_end_to_end(subscriber)
        # A probe whose alert the subscriber did not see live is looked for in the notifier's store: the live socket
        # drops what a slow subscriber does not take (catch-up has it), while a crash never stored is a lost alert.
        lost = [user for user in missing["notSeenLive"] if up.crash_stored(user) is False]
        if lost:
            raise RuntimeError("crash alerts lost: %d of %d probes never gave a stored crashDetected (%s)"
                               % (len(lost), options.probes, ", ".join(lost)))

        # Detection killed under load; up restarts it.
        restart = second_seconds = None
        if not options.skip_restart:
            before = len(up.caught_up_lines())
            second = run_send(tools, up.endpoint["gateway"], files["restart"][0], options, up.gateway,
                              background=True)
            time.sleep(2)
            os.kill(up.pids["detect"], signal.SIGKILL)
            killed_at = time.monotonic()
            second.wait()
            second_seconds = time.monotonic() - killed_at
            while time.monotonic() - killed_at < 300 and restart is None:
                found = up.caught_up_lines()
                if len(found) > before:
                    restart = float(found[-1])
                time.sleep(0.1)
            up.wait_end_to_end(subscriber)
            loads["restart"] = load_average()
        final = {name: {k: v / MiB for k, v in memory(pid).items()} for name, pid in up.pids.items()}
        subscriber.stop()
        up.stop()

        # Detection's floor: `roadsave replay` of the flood's own records from MessagePack (the same engines, ordering
        # and decoding, with nothing stored and no sockets), CPU measured as the client's.
        replay_before = children_cpu_seconds()
        subprocess.run([os.path.join(tools, "roadsave"), "replay", files["main"][0], "--quiet", "--no-progress"],
                       stdout=subprocess.DEVNULL, check=True)
        replay_cpu = (children_cpu_seconds() - replay_before) * 1e6 / max(1, files["main"][1])

        shards = None
        if not options.skip_shards:
            shards = detection_shards(binaries, tools, directory, files["main"], options,
                                      os.path.join(directory, "up", "keys") if keys_on else None)
            loads["shards"] = load_average()

        # Report.
        keys_text = "keys" if keys_on else "no keys"
        print("services benchmark: %d devices, batches of %d, %d in flight, %s, client %s (%s)"
              % (options.devices, options.batch, options.window, keys_text,
                 "roadsave send" if client == "send" else "python flood", build_name(binaries)))
        for name, result in clients.items():
            label = "roadsave send (MessagePack file)" if name == "send" else "python flood gateway"
            print("client    %-36s %8.0f records/s into the bare server" % (label, result["rate"]))
            figure("services client %s into bare" % ("roadsave send" if name == "send" else "python flood"),
                   result["rate"], "records/s", stage="bare")
        print("bare      ack-server (unpack + validate + ack):     %8.0f records/s" % baseline["rate"])
        print("services  acknowledged (journal fsync'd):           %8.0f records/s  (%.2f of bare)"
              % (run["rate"], run["rate"] / baseline["rate"]))
        print("services  end to end (subscriber has it all):       %8.0f records/s  (%.2f of bare); done %.1f s after the last ack"
              % (end_to_end, end_to_end / baseline["rate"], end_to_end_wait if end_to_end_wait is not None else float("nan")))
        figure("services bare ack-server (%s)" % keys_text, baseline["rate"], "records/s", stage="bare")
        figure("services acknowledged (%s)" % keys_text, run["rate"], "records/s", "bare ack-server, same client",
               baseline["rate"], stage="services")
        figure("services end to end (%s)" % keys_text, end_to_end, "records/s", "bare ack-server, same client",
               baseline["rate"], "ratio >= 0.6", stage="services")
        bare_cpu = cpu.get(client)
        if bare_cpu:
            per = lambda seconds, records: seconds * 1e6 / max(1, records)
            bare_client, bare_server = per(bare_cpu["client"], bare_cpu["records"]), per(bare_cpu["bare"], bare_cpu["records"])
            services_client = per(client_seconds, run["acknowledged"])
            each = {name: per(seconds, run["acknowledged"]) for name, seconds in services_cpu.items()}
            print("cpu       µs a record: bare path %.2f (client %.2f, ack-server %.2f); services path %.2f (client %.2f, %s)"
                  % (bare_client + bare_server, bare_client, bare_server, services_client + sum(each.values()),
                     services_client, ", ".join("%s %.2f" % (name, value) for name, value in sorted(each.items()))))
            figure("cpu a record, bare path", bare_client + bare_server, "µs", stage="bare")
            figure("cpu a record, services path", services_client + sum(each.values()), "µs",
                   "bare path, same client", bare_client + bare_server, stage="services")
            # Each service against the floor of its own work, measured in this run: ingest against the ack-server
            # (receive, decrypt, unpack, validate, acknowledge), detection against replay of the same records.
            floors = {"ingest": ("ack-server, same run", bare_server), "detect": ("replay msgpack, same records", replay_cpu)}
            print("cpu       against their floors: %s" % "; ".join(
                "%s %.2f µs = %.2f× %s %.2f" % (name, each[name], each[name] / floor, label, floor)
                for name, (label, floor) in floors.items() if name in each and floor))
            for name, value in each.items():
                label, floor = floors.get(name, (None, None))
                figure("cpu a record, %s" % name, value, "µs", label, floor, "ratio <= 1.5" if label else None,
                       stage="services")
        p50, p90, p99 = percentile(latencies, 0.5), percentile(latencies, 0.9), percentile(latencies, 0.99)
        print("latency   crash alert at half load (%.0f records/s): p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms (%d probes; "
              "%d alerts came before the ack, %d were stored but not seen live); detection %d chunks behind after the probes"
              % (half, p50, p90, p99, latencies[-1] if latencies else float("nan"), len(latencies), len(missing["beforeAck"]),
                 len(missing["notSeenLive"]), lag_after_probes))
        syncs = canary.durations()
        print("disk      a 4 KiB fdatasync every %.0f ms during the probes: p50 %.2f ms, max %.1f ms, %d over %.0f ms; "
              "%d probes met one; p99 of the %d others %.1f ms"
              % (canary.interval * 1000, percentile(syncs, 0.5) * 1000, percentile(syncs, 1.0) * 1000, len(stalls),
                 DISK_STALL * 1000, len(latencies) - len(clear_latencies), len(clear_latencies),
                 percentile(clear_latencies, 0.99)))
        figure("disk fdatasync max during the probes", percentile(syncs, 1.0) * 1000, "ms", stage="latency")
        figure("crash alert probes that met a disk stall", len(latencies) - len(clear_latencies), "probes",
               stage="latency")
        if clear_latencies:
            figure("crash alert latency p99 (half load), probes that met no disk stall",
                   percentile(clear_latencies, 0.99), "ms", stage="latency")
        figure("crash alert latency p50 (half load)", p50, "ms", None, None, "<= 8", stage="latency")
        figure("crash alert latency p90 (half load)", p90, "ms", stage="latency")
        figure("crash alert latency p99 (half load)", p99, "ms", None, None, "<= 20", stage="latency")
        figure("crash alert probes", len(latencies), "probes", stage="latency")
        figure("crash alerts before the ack", len(missing["beforeAck"]), "probes", stage="latency")
        figure("crash alerts stored but not seen live", len(missing["notSeenLive"]), "probes", stage="latency")
        if not options.skip_restart:
            print("restart   detection SIGKILLed mid-flood: caught up %.1f s after its restart (the flood went on until %.1f s after the kill)"
                  % (restart if restart is not None else float("nan"), second_seconds))
            figure("detection catch-up after SIGKILL", restart, "s", stage="restart")
        if shards:
            print_shards(shards, files["main"][1])
            add_shard_figures(figure, shards)
        for name in ["ingest", "detect", "notify"]:
            print("memory    %-7s peak %5.0f MiB after the first flood, resident %5.0f MiB at the end"
                  % (name, peak.get(name, {}).get("VmHWM", 0), final.get(name, {}).get("VmRSS", 0)))
            figure("memory %s peak" % name, peak.get(name, {}).get("VmHWM", 0), "MiB", stage="services")
        print("load      1-minute load average after each stage: %s" % ", ".join(
            "%s %.1f" % (stage, value) for stage, value in loads.items() if value is not None))
        if options.json:
            with open(options.json, "w") as handle:
                json.dump(figures, handle, indent=1)
        if options.check:
            unmeasured = [f["figure"] for f in figures if f["value"] is None]
            expected = ["services bare ack-server", "services acknowledged", "services end to end",
                        "cpu a record, bare path", "cpu a record, services path", "cpu a record, ingest",
                        "cpu a record, detect", "cpu a record, notify", "crash alert latency p99 (half load)"]
            absent = [name for name in expected if not any(f["figure"].startswith(name) for f in figures)]
            if unmeasured or absent:
                print("bench check: not measured: %s" % ", ".join(unmeasured + absent), file=sys.stderr)
                sys.exit(1)
            print("bench check: all %d figures measured" % len(figures))
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
