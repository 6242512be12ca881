#!/usr/bin/env python3
"""Network-partition drills for the three services (`make partition-test`; root, not part of `make test`).

Topology: five network namespaces, named rsp-<pid>-<role> so that parallel or leftover runs never collide, in a
chain of four links:

    namespaces   gw ────────── ingest ─────────── detect ─────────── notify ─────────── sub
    links           gw-ingest        ingest-detect     detect-notify       notify-sub
    run there    roadsave send  roadsave ingest    roadsave detect    roadsave notify    roadsave tail (x2)

Link L (1 to 4, left to right) joins 10.77.L.1 in its left namespace and 10.77.L.2 in its right one: the gateway
sends to 10.77.1.2:5550, detection reads 10.77.2.1:5551, the notifier 10.77.3.1:5553, subscribers 10.77.4.1:5554/5.

Each link is a pair of point-to-point TUN devices that scripts/tun_forwarder.py (one process for every link)
creates in the root namespace and that are then moved into their namespaces; the forwarder copies the IP packets
between the two and, on command, cuts a link (every packet dropped silently, like a cut cable: no RST, no ICMP),
heals it, loses and delays packets on it, or forgets its TCP flows like a NAT that timed them out. The kernel here
has no netem, iptables or tc actions, hence the forwarder. Nothing else routes between the namespaces, so a cut
link is a real partition. Every service has its own fresh --data-dir and its metrics endpoint on 127.0.0.1:9550 of
its namespace; the harness reads those from threads that first enter the namespace (setns(2)).

Every socket runs CurveZMQ (keys from `roadsave keygen`, one allow-list as `roadsave up --keys` writes it) unless
--insecure. The gateway sends a simulated fleet (50 devices, 3 crashes, a reordering gateway: `simulate
--disorder`) with `roadsave send --rate R`, R chosen so that the stream lasts LEAD (30 s) + the cut + TAIL (40 s):
the cut starts 30 s into the stream and records still flow after the heal. `roadsave tail --since 0` in the sub
namespace is the subscriber under test; a second `roadsave tail` inside the notify namespace (loopback, never cut)
is the reference that says when the notifier published each event.

Drills (each on fresh namespaces, services and data directories):
  ingest-detect-60, ingest-detect-180   cut the journal feed for 60 / 180 s
  detect-notify-60, detect-notify-180   cut the outbox feed for 60 / 180 s
  gateway-ingest-45                     cut the gateway's link for 45 s: a cut there cannot be told from a
                                        gateway that stopped, and after detection's --watermark-hold (60 s) its
                                        devices go by the clock (docs/operating.md, "Links"); 45 s and the recovery
                                        stay within it
  subscriber-60                         cut notify–sub for 60 s
  loss                                  30 % loss and 200 ms delay on every link for 60 s
  idle-subscriber                       a subscriber listening only for crashDetected has heard nothing for a while
                                        (--idle-seconds) when the "NAT" on notify–sub forgets every flow; then a
                                        crash is sent (a one-device file): it must reach that subscriber live, within
                                        the heartbeat timeout plus a reconnect (10 s) of the notifier publishing it

Checks per drill: (1) every event `roadsave replay` gives reached the subscriber once (by eventID), none extra, the
bodies equal; (2) nothing unapplied at detection (records_total{outcome="late"}, unapplied_records_total and any
other *unapplied* metric are 0); (3) every record acknowledged (send exits 0, its summary says all accepted);
(4) recovery: seconds from the heal until traffic flows again over the healed link at the application level
(polled every 0.2 s); (5) for service-link cuts: seconds from the cut until the downstream service's /readyz says
503 and until its unanswered-seconds gauge passes 5 ("n/a" where the binaries have no such gauge); (6) the services
still run and stop cleanly; their error-level log lines and every line about watermarks or unapplied records are
reported. Verdict PASS when recovery <= 5 s, readiness 503 <= 10 s (service links), nothing lost, twice, extra,
different or unapplied, every record acknowledged, no service died (idle-subscriber: the crash live within 10 s).

    sudo python3 scripts/partition_test.py --bin .build/debug [--drills a,b] [--runs N] [--cut-seconds S]
                                           [--json FILE] [--keep] [--insecure] [--service-args NAME='ARGS']

(`make partition-test PARTITION_ARGS='...'` builds first and passes the options on.) Every option is below; the
figures a drill gathers (a sample a second of each service's key metrics, readiness changes, forwarder counters,
log lines) are all in --json FILE; --keep keeps each drill's logs, subscriber outputs and data directories.

Exit status: 0 when every drill passed, 1 when one failed, 2 when the machine cannot run it (not root, no
/dev/net/tun, no `ip netns`) or for bad options.
"""
import argparse
import atexit
import collections
import ctypes
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tun_forwarder import ForwarderClient  # noqa: E402  (next to this file)

HERE = os.path.dirname(os.path.abspath(__file__))
APP = "demo-app"
METRICS_PORT = 9550
POLL = 0.2  # seconds between two looks at a condition
TUN_QUEUE = 10000  # packets each TUN device queues for the forwarder
CLONE_NEWNET = 0x40000000

# The chain, left to right: (link, left namespace, right namespace). Link L (1-based) joins 10.77.L.1 (the left end)
# and 10.77.L.2 (the right end), point to point.
LINKS = [("gw-ingest", "gw", "ingest"), ("ingest-detect", "ingest", "detect"),
         ("detect-notify", "detect", "notify"), ("notify-sub", "notify", "sub")]
ROLES = ["gw", "ingest", "detect", "notify", "sub"]


def address(link, side):
    """The address of one end of a link: side 0 is the left namespace, 1 the right."""
    index = [name for name, _, _ in LINKS].index(link) + 1
    return "10.77.%d.%d" % (index, side + 1)


INGEST_GATEWAY = "tcp://%s:5550" % address("gw-ingest", 1)
INGEST_JOURNAL = "tcp://%s:5551" % address("ingest-detect", 0)
DETECT_OUTBOX = "tcp://%s:5553" % address("detect-notify", 0)
NOTIFY_PUBLISH = "tcp://%s:5554" % address("notify-sub", 0)
NOTIFY_CATCH_UP = "tcp://%s:5555" % address("notify-sub", 0)


class Drill:
    """One drill: what is done to which link for how long, and which service sits downstream of it."""

    def __init__(self, name, kind, link=None, seconds=60, downstream=None):
        self.name, self.kind, self.link, self.seconds, self.downstream = name, kind, link, seconds, downstream

    @property
    def service_link(self):
        """A link between two services: the downstream service's readiness must say it."""
        return self.kind == "cut" and self.link in ("ingest-detect", "detect-notify")


DRILLS = [
    Drill("ingest-detect-60", "cut", "ingest-detect", 60, "detect"),
    Drill("ingest-detect-180", "cut", "ingest-detect", 180, "detect"),
    Drill("detect-notify-60", "cut", "detect-notify", 60, "notify"),
    Drill("detect-notify-180", "cut", "detect-notify", 180, "notify"),
    Drill("gateway-ingest-45", "cut", "gw-ingest", 45, "ingest"),
    Drill("subscriber-60", "cut", "notify-sub", 60, None),
    Drill("loss", "loss", None, 60, None),
    Drill("idle-subscriber", "idle", "notify-sub", 0, None),
]

# Targets.
RECOVERY_TARGET = 5.0
READINESS_TARGET = 10.0
IDLE_CRASH_TARGET = 10.0

STARTED = time.monotonic()


def log(message):
    """A progress line: wall-clock time and seconds since the harness started."""
    print("%s +%6.1fs  %s" % (time.strftime("%H:%M:%S"), time.monotonic() - STARTED, message), flush=True)


def seconds_text(value):
    return "n/a" if value is None else "%.1f" % value


# MARK: Cleanup: everything started is registered here and removed at exit, also on Ctrl-C or an exception.

class Cleanup:
    def __init__(self):
        self.processes, self.namespaces, self.directories = [], [], []
        self.lock = threading.Lock()
        self.done = False

    def process(self, popen):
        with self.lock:
            self.processes.append(popen)
        return popen

    def run(self):
        with self.lock:
            if self.done:
                return
            self.done = True
        for popen in reversed(self.processes):
            terminate(popen, timeout=10)
        for namespace in self.namespaces:
            delete_namespace(namespace)
        for directory in self.directories:
            shutil.rmtree(directory, ignore_errors=True)


CLEANUP = Cleanup()


def terminate(popen, timeout=30.0, sig=signal.SIGTERM):
    """Stops one process we started (by its pid, never by name); SIGKILL when it does not stop in time. Returns its
    exit status and whether it had to be killed."""
    if popen.poll() is not None:
        return popen.returncode, False
    try:
        popen.send_signal(sig)
        return popen.wait(timeout=timeout), False
    except subprocess.TimeoutExpired:
        popen.kill()
        return popen.wait(), True
    except ProcessLookupError:
        return popen.wait(), False


def delete_namespace(namespace):
    """Kills what still runs in one of our namespaces, then deletes it."""
    if not os.path.exists("/run/netns/" + namespace):
        return
    pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


# MARK: Namespaces and links

def run(argv, **options):
    """A command that must succeed (setup steps)."""
    result = subprocess.run(argv, capture_output=True, text=True, **options)
    if result.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), result.returncode, result.stderr.strip()))
    return result.stdout


class Topology:
    """The five namespaces, the forwarder and the four links of one drill."""

    made = 0

    def __init__(self, directory, tag):
        self.directory = directory
        self.prefix = "rsp-%d-%s" % (os.getpid(), tag)
        self.namespaces = {role: "%s-%s" % (self.prefix, role) for role in ROLES}
        # Device names have at most 15 characters: r<pid><n>l<link><a|b>, n counting the topologies of this run.
        Topology.made += 1
        base = "r%d%d" % (os.getpid() % 100000, Topology.made % 1000)
        self.devices = {link: (base + "l%da" % index, base + "l%db" % index)
                        for index, (link, _, _) in enumerate(LINKS, 1)}
        self.control = os.path.join(directory, "forwarder.sock")
        if len(self.control) > 100:  # a UNIX socket path has room for 107 bytes
            self.control = os.path.join(tempfile.gettempdir(), "%s.sock" % self.prefix)
        self.forwarder = None
        self.client = ForwarderClient(self.control)

    def up(self):
        for namespace in self.namespaces.values():
            CLEANUP.namespaces.append(namespace)
            run(["ip", "netns", "add", namespace])
            run(["ip", "-n", namespace, "link", "set", "lo", "up"])
        self.start_forwarder()
        for link, left, right in LINKS:
            for side, role in enumerate((left, right)):
                self.attach(link, side, role)

    def start_forwarder(self):
        argv = [sys.executable, os.path.join(HERE, "tun_forwarder.py"), "--control", self.control]
        for link, devices in self.devices.items():
            argv += ["--link", "%s=%s,%s" % (link, devices[0], devices[1])]
        errors = open(os.path.join(self.directory, "forwarder.log"), "w")
        self.forwarder = CLEANUP.process(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, text=True,
                                                          start_new_session=True))
        line = self.forwarder.stdout.readline()
        if not line.startswith("{") or not json.loads(line).get("ready"):
            raise RuntimeError("the forwarder did not start: see %s" % errors.name)

    def attach(self, link, side, role):
        """Moves one TUN end into its namespace, gives it its point-to-point address and brings it up."""
        device, namespace = self.devices[link][side], self.namespaces[role]
        run(["ip", "link", "set", device, "netns", namespace])
        run(["ip", "-n", namespace, "addr", "add", address(link, side), "peer", address(link, 1 - side),
             "dev", device])
        # A long queue: after a long cut TCP sends its backlog in bursts, and the default 500 packets overflowed
        # (the kernel's tx drops) before the forwarder's next read; a cut, not the harness, should drop packets.
        run(["ip", "-n", namespace, "link", "set", device, "txqueuelen", str(TUN_QUEUE), "up"])

    def command(self, op, link="*", **fields):
        return self.client.request(op, link=link, **fields)

    def stats(self):
        return self.client.request("stats")

    def kernel_drops(self):
        """Packets the kernel dropped on the TUN devices (a full queue: the forwarder not reading fast enough)."""
        drops = {}
        for link, left, right in LINKS:
            for side, role in enumerate((left, right)):
                device = self.devices[link][side]
                try:
                    info = json.loads(run(["ip", "-n", self.namespaces[role], "-s", "-j", "link", "show", device]))
                    drops[device] = info[0]["stats64"]["tx"]["dropped"]
                except Exception:
                    drops[device] = None
        return drops

    def down(self):
        if self.forwarder is not None:
            try:
                self.client.request("quit")
            except Exception:
                pass
            terminate(self.forwarder, timeout=5)
        for namespace in self.namespaces.values():
            delete_namespace(namespace)
            if namespace in CLEANUP.namespaces:
                CLEANUP.namespaces.remove(namespace)


# MARK: Reading inside a namespace

LIBC = ctypes.CDLL(None, use_errno=True)


def enter_namespace(namespace):
    """Moves the calling thread (only it) into a network namespace: sockets it makes afterwards live there."""
    fd = os.open("/run/netns/" + namespace, os.O_RDONLY)
    try:
        if LIBC.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns %s" % namespace)
    finally:
        os.close(fd)


def http_get(path, port=METRICS_PORT, timeout=2.0):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        connection.close()


def in_namespace(namespace, function, *arguments, timeout=10.0):
    """Runs function(*arguments) on a thread of its own inside the namespace and returns its result."""
    result = {}

    def body():
        try:
            enter_namespace(namespace)
            result["value"] = function(*arguments)
        except Exception as error:
            result["error"] = error

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout)
    if "error" in result:
        raise result["error"]
    if "value" not in result:
        raise TimeoutError("no answer within %.0f s in %s" % (timeout, namespace))
    return result["value"]


def established(remote_port):
    """TCP connections of this thread's namespace in state ESTABLISHED to remote_port (/proc/thread-self/net/tcp
    shows the namespace of the reading thread)."""
    count = 0
    with open("/proc/thread-self/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            if fields[3] == "01" and int(fields[2].split(":")[1], 16) == remote_port:
                count += 1
    return count


class Sample:
    """One look at a service: its metrics by sample name ([(labels, value)]) and its readiness."""

    def __init__(self, at, metrics, ready, reason):
        self.at, self.metrics, self.ready, self.reason = at, metrics, ready, reason

    def value(self, name, how=sum, **labels):
        """A metric's value (summed, or max, over the matching label sets), or None when absent."""
        values = [value for found, value in self.metrics.get(name, [])
                  if all(found.get(key) == wanted for key, wanted in labels.items())]
        return how(values) if values else None


def parse_metrics(text):
    # prometheus_client's own parser, so a line the format does not allow is an error, not a wrong figure. Imported
    # here so that the preflight can say it is missing instead of a traceback.
    from prometheus_client.parser import text_string_to_metric_families
    metrics = collections.defaultdict(list)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            metrics[sample.name].append((sample.labels, sample.value))
    return dict(metrics)


class Sampler(threading.Thread):
    """Scrapes one service's /metrics and /readyz every POLL seconds from inside its namespace and keeps every
    sample with its time, so that the drill can tell afterwards when something first happened."""

    def __init__(self, name, namespace):
        super().__init__(daemon=True, name="sampler-" + name)
        self.service, self.namespace = name, namespace
        self.samples, self.stopping = [], threading.Event()

    def run(self):
        enter_namespace(self.namespace)
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                status, text = http_get("/metrics")
                metrics = parse_metrics(text) if status == 200 else {}
                ready, reason = http_get("/readyz")
                self.samples.append(Sample(time.monotonic(), metrics, ready, reason.strip()))
            except Exception as error:  # not up yet, or stopping: a sample with nothing in it
                self.samples.append(Sample(time.monotonic(), {}, None, str(error)))
            self.stopping.wait(max(0.0, POLL - (time.monotonic() - started)))

    def latest(self):
        for sample in reversed(self.samples):
            if sample.metrics:
                return sample
        return None

    def since(self, moment):
        return [sample for sample in list(self.samples) if sample.at >= moment]

    def readiness_changes(self, origin):
        """Every change of /readyz's status, as (seconds since origin, status, reason)."""
        changes, last = [], object()
        for sample in list(self.samples):
            if sample.ready != last:
                changes.append((round(sample.at - origin, 1), sample.ready, sample.reason[:200]))
                last = sample.ready
        return changes

    def series(self, origin, names, step=1.0):
        """A sample every `step` seconds: [seconds since origin, /readyz status, each metric (None if absent)]."""
        rows, following = [], None
        for sample in list(self.samples):
            if following is not None and sample.at < following:
                continue
            following = sample.at + step
            rows.append([round(sample.at - origin, 1), sample.ready]
                        + [sample.value(name, max if name.endswith("seconds") else sum) if sample.metrics else None
                           for name in names])
        return {"columns": ["t", "ready"] + names, "rows": rows}

    def value_at(self, moment, name, how=sum):
        """The last value of a metric at or before a moment."""
        for sample in reversed(list(self.samples)):
            if sample.at <= moment and sample.metrics:
                return sample.value(name, how)
        return None


# MARK: Processes

class Service:
    """One service process in its namespace, its stderr (logfmt) captured to a file, and its sampler."""

    def __init__(self, name, namespace, argv, directory, environment=None):
        self.name, self.namespace = name, namespace
        self.log_path = os.path.join(directory, name + ".log")
        with open(self.log_path, "w") as errors:
            self.popen = CLEANUP.process(subprocess.Popen(
                ["ip", "netns", "exec", namespace] + argv, stdout=errors, stderr=errors,
                env=dict(os.environ, **(environment or {})), start_new_session=True))
        self.sampler = Sampler(name, namespace)
        self.sampler.start()
        self.exit_status, self.killed, self.died = None, False, None

    def alive(self):
        return self.popen.poll() is None

    def stop(self):
        if not self.alive() and self.died is None:
            self.died = "exited by itself with status %s" % self.popen.returncode
        self.exit_status, self.killed = terminate(self.popen, timeout=30)
        self.sampler.stopping.set()

    def log_lines(self):
        with open(self.log_path, errors="replace") as handle:
            return handle.read().splitlines()


class Tail:
    """A `roadsave tail --show-position` whose every line is stamped with the time it was read (tail writes each
    line straight to its fd, unbuffered), and kept in a file too."""

    def __init__(self, name, namespace, argv, directory):
        self.name = name
        self.events = []  # (time, position, event)
        self.errors = []  # (time, line)
        self.output = open(os.path.join(directory, name + ".ndjson"), "w")
        self.error_log = open(os.path.join(directory, name + ".log"), "w")
        self.popen = CLEANUP.process(subprocess.Popen(
            ["ip", "netns", "exec", namespace] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True))
        self.readers = [threading.Thread(target=self.read_events, daemon=True),
                        threading.Thread(target=self.read_errors, daemon=True)]
        for reader in self.readers:
            reader.start()

    def read_events(self):
        for raw in self.popen.stdout:
            at = time.monotonic()
            line = raw.decode(errors="replace").rstrip("\n")
            self.output.write(line + "\n")
            self.output.flush()
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and "event" in item and isinstance(item["event"], dict):
                self.events.append((at, item.get("position"), item["event"]))
            else:  # printed without --show-position
                self.events.append((at, None, item))

    def read_errors(self):
        for raw in self.popen.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.errors.append((time.monotonic(), line))
            self.error_log.write(line + "\n")
            self.error_log.flush()

    def ids(self):
        return [event.get("eventID") for _, _, event in list(self.events)]

    def first_time(self, event_id):
        for at, _, event in list(self.events):
            if event.get("eventID") == event_id:
                return at
        return None

    def stop(self):
        status, killed = terminate(self.popen, timeout=10)
        for reader in self.readers:
            reader.join(5)
        self.output.close()
        self.error_log.close()
        return status, killed


# MARK: Keys, records, expectations

def make_keys(binary, directory):
    """Key pairs as `roadsave up --keys` makes them (a service pair each for ingest, detect, notify; gateway, operator
    and subscriber clients) and one allow-list admitting them, which every service reads."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    lines = []
    for name, role in [("ingest", "service"), ("detect", "service"), ("notify", "service"),
                       ("gateway", "gateway"), ("operator", "operator"), ("subscriber", "subscriber")]:
        out = run([binary, "keygen", name, "--directory", directory, "--role", role])
        lines += [line.split("allow-list line: ", 1)[1] for line in out.splitlines()
                  if line.startswith("allow-list line: ")]
    with open(os.path.join(directory, "allow.txt"), "w") as handle:
        handle.write("# partition test keys\n" + "\n".join(lines) + "\n")
    return directory


def simulate(binary, path, **flags):
    argv = [binary, "simulate", "--output", path, "--no-progress"]
    for flag, value in flags.items():
        argv += ["--" + flag.replace("_", "-")] + ([] if value is True else [str(value)])
    run(argv)
    with open(path) as handle:
        return sum(1 for _ in handle)


def replay(binary, path):
    """The events replay gives for a record file, by eventID."""
    out = run([binary, "replay", path])
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {event["eventID"]: event for event in events}


class Workload:
    """The record files and the events expected of them, made once for every drill of a run."""

    def __init__(self, binary, directory, options):
        self.fleet = os.path.join(directory, "fleet.ndjson")
        self.fleet_records = simulate(binary, self.fleet, devices=options.devices, crashes=options.crashes,
                                      seed=options.seed, duration=options.minutes, disorder=True)
        self.fleet_events = replay(binary, self.fleet)
        # The idle-subscriber drill: a small fleet without crashes first, then one device that crashes.
        self.warmup = os.path.join(directory, "warmup.ndjson")
        self.warmup_records = simulate(binary, self.warmup, devices=5, seed=options.seed + 1, duration=10,
                                       disorder=True)
        self.warmup_events = replay(binary, self.warmup)
        self.crash = os.path.join(directory, "crash.ndjson")
        self.crash_records = simulate(binary, self.crash, devices=1, crashes=1, seed=options.seed + 2, duration=8,
                                      user_prefix="crash-", disorder=True)
        self.crash_events = replay(binary, self.crash)
        crashes = [event for event in self.crash_events.values() if event["event"] == "crashDetected"]
        if len(crashes) != 1:
            raise RuntimeError("the crash file gives %d crashDetected events, not 1" % len(crashes))
        self.crash_event_id = crashes[0]["eventID"]


# MARK: The services of a drill

class Stack:
    """Topology, services, subscribers and gateway of one drill; `close` stops and removes all of it."""

    def __init__(self, options, directory, tag, keys):
        self.options, self.directory, self.keys = options, directory, keys
        self.binary = os.path.join(options.bin, "roadsave")
        self.topology = Topology(directory, tag)
        self.services, self.tails, self.tail_roles, self.sends = {}, {}, {}, []
        self.origin = time.monotonic()  # times in the results count from here

    def curve(self, name, server=None):
        if self.keys is None:
            return ["--insecure"]
        flags = ["--curve-secret-key", os.path.join(self.keys, name + ".key"),
                 "--allow", os.path.join(self.keys, "allow.txt")]
        if server:
            flags += ["--curve-server-key", os.path.join(self.keys, server + ".key.pub")]
        return flags

    def client_keys(self, name, server):
        if self.keys is None:
            return []
        return ["--key", os.path.join(self.keys, name + ".key"),
                "--server-key", os.path.join(self.keys, server + ".key.pub")]

    def extra(self, service):
        return [argument for name, arguments in self.options.service_args if name == service
                for argument in arguments]

    def start(self):
        self.topology.up()
        common = ["--metrics-endpoint", "127.0.0.1:%d" % METRICS_PORT]
        data = lambda name: ["--data-dir", os.path.join(self.directory, name + "-data")]
        self.add_service("ingest", [self.binary, "ingest", "--gateway-endpoint", "tcp://*:5550",
                                    "--records-endpoint", "tcp://*:5551"] + data("ingest") + common
                         + self.curve("ingest") + self.extra("ingest"), {"ROADSAVE_APPLICATIONS": APP})
        self.add_service("detect", [self.binary, "detect", "--records-endpoint", INGEST_JOURNAL,
                                    "--control-endpoint", "tcp://*:5552", "--events-endpoint", "tcp://*:5553"]
                         + data("detect") + common + self.curve("detect", "ingest") + self.extra("detect"))
        self.add_service("notify", [self.binary, "notify", "--events-endpoint", DETECT_OUTBOX,
                                    "--publish-endpoint", "tcp://*:5554", "--catch-up-endpoint", "tcp://*:5555"]
                         + data("notify") + common + self.curve("notify", "detect") + self.extra("notify"))
        self.wait_ready()
        # The reference subscriber, inside the notify namespace on loopback: never behind a cut link.
        self.add_tail("reference", "notify", "tcp://127.0.0.1:5554", "tcp://127.0.0.1:5555")
        self.add_tail("subscriber", "sub", NOTIFY_PUBLISH, NOTIFY_CATCH_UP)

    def add_service(self, name, argv, environment=None):
        self.services[name] = Service(name, self.topology.namespaces[name], argv, self.directory, environment)

    def add_tail(self, name, role, endpoint, catch_up, extra=()):
        argv = [self.binary, "tail", "--endpoint", endpoint, "--catch-up-endpoint", catch_up, "--since", "0",
                "--show-position", "--log-level", "info"] + list(extra) + self.client_keys("subscriber", "notify")
        argv += self.extra("tail")
        self.tails[name] = Tail(name, self.topology.namespaces[role], argv, self.directory)
        self.tail_roles[name] = role
        if role == "sub":  # the live and catch-up connections up through the link before anything is published
            namespace, count = self.topology.namespaces[role], list(self.tail_roles.values()).count(role)
            wait_until(lambda: in_namespace(namespace, established, 5554) >= count
                       and in_namespace(namespace, established, 5555) >= count,
                       30, "%s connected to the notifier" % name)

    def wait_ready(self):
        for name, service in self.services.items():
            def ready():
                if not service.alive():
                    raise DrillError("%s exited at start (status %s): see %s"
                                     % (name, service.popen.returncode, service.log_path))
                sample = service.sampler.latest()
                return sample is not None and sample.ready == 200
            wait_until(ready, 60, "%s ready" % name)

    def send(self, name, path, rate=None):
        """Starts `roadsave send` in the gateway namespace; its summary and warnings go to files."""
        argv = [self.binary, "send", path, "--endpoint", INGEST_GATEWAY, "--attempts",
                str(self.options.send_attempts), "--no-progress"]
        argv += (["--rate", "%.1f" % rate] if rate else []) + self.client_keys("gateway", "ingest") + self.extra("send")
        out_path, errors_path = (os.path.join(self.directory, name + suffix) for suffix in (".out", ".log"))
        with open(out_path, "w") as out, open(errors_path, "w") as errors:
            popen = CLEANUP.process(subprocess.Popen(["ip", "netns", "exec", self.topology.namespaces["gw"]] + argv,
                                                     stdout=out, stderr=errors, start_new_session=True))
        self.sends.append((name, popen, out_path, errors_path))
        return popen

    def close(self):
        """Stops everything (gateways, subscribers, then ingest, detection and the notifier, as `up` does) and
        removes the namespaces; returns nothing, the services keep their exit statuses."""
        for _, popen, _, _ in self.sends:
            terminate(popen, timeout=10)
        for tail in self.tails.values():
            tail.stop()
        for name in ("ingest", "detect", "notify"):
            if name in self.services:
                self.services[name].stop()
        self.topology.down()


class DrillError(Exception):
    """A drill that cannot go on (a service dead at start, a bound exceeded): it fails with this message."""


def wait_until(condition, timeout, what):
    """Polls a condition every POLL seconds; returns the time it took, or raises DrillError naming what was
    awaited when the (generous) bound passes."""
    started = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise DrillError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(POLL)


def poll_until(condition, timeout):
    """Like wait_until, but returns None at the bound instead of failing: for figures that may never come."""
    started = time.monotonic()
    while time.monotonic() - started <= timeout:
        if condition():
            return time.monotonic()
        time.sleep(POLL)
    return None


# MARK: Measurements

def progress_moment(sampler, counter, gauge, heal, fallback=None):
    """The first sample after `heal` showing that the link carries application traffic again: `counter` moved past
    its value at the heal, or `gauge` (seconds since the upstream last answered) says it answered after the heal,
    or `fallback(sampler, heal, sample)` says so. None when not (yet)."""
    at_heal = sampler.value_at(heal, counter)
    for sample in sampler.since(heal):
        if not sample.metrics:
            continue
        moved = sample.value(counter)
        if moved is not None and at_heal is not None and moved > at_heal:
            return sample.at
        silent = sample.value(gauge, max) if gauge else None
        if silent is not None and silent < 1.0 and sample.at - silent > heal:
            return sample.at
        if fallback and fallback(sampler, heal, sample):
            return sample.at
    return None


def silent_upstreams_cleared(sampler, heal, sample):
    """Old notifiers: `roadsave_notifier_upstreams_silent` back to 0 after it was not at the heal."""
    before = sampler.value_at(heal, "roadsave_notifier_upstreams_silent")
    now = sample.value("roadsave_notifier_upstreams_silent")
    return bool(before) and now == 0


LINK_PROGRESS = {
    # link: (service whose metrics say it, counter that moves with traffic, unanswered gauge, fallback)
    "gw-ingest": ("ingest", "roadsave_ingest_records_accepted_total", None, None),
    "ingest-detect": ("detect", "roadsave_detection_records_read_total",
                      "roadsave_detection_feed_unanswered_seconds", None),
    "detect-notify": ("notify", "roadsave_notifier_events_stored_total",
                      "roadsave_notifier_feed_unanswered_seconds", silent_upstreams_cleared),
}
# What --json keeps of each service, a sample a second, to see what a drill did after the fact.
SERIES = {"ingest": ["roadsave_ingest_records_accepted_total"],
          "detect": ["roadsave_detection_records_read_total", "roadsave_detection_lag_positions",
                     "roadsave_detection_lag_seconds", "roadsave_detection_feed_unanswered_seconds",
                     "roadsave_detection_feed_requests_resent_total", "roadsave_detection_unapplied_records_total"],
          "notify": ["roadsave_notifier_events_stored_total", "roadsave_notifier_upstreams_silent",
                     "roadsave_notifier_feed_unanswered_seconds", "roadsave_notifier_feed_requests_resent_total"]}
UNANSWERED_GAUGE = {"detect": "roadsave_detection_feed_unanswered_seconds",
                    "notify": "roadsave_notifier_feed_unanswered_seconds"}


def subscriber_progress(stack, heal):
    """notify–sub flows again: the subscriber has everything the reference had printed by the heal (what was
    published during the cut), or, when it had that already, it printed the next event within a moment of the
    reference. Returns the moment, or None."""
    reference, subscriber = stack.tails["reference"], stack.tails["subscriber"]
    wanted = {event_id for at, _, event in list(reference.events) if at <= heal
              for event_id in [event.get("eventID")]}
    got_at_heal = {event.get("eventID") for at, _, event in list(subscriber.events) if at <= heal}
    if wanted - got_at_heal:
        have = set()
        for at, _, event in list(subscriber.events):
            have.add(event.get("eventID"))
            if at > heal and wanted <= have:
                return at
        return None
    for at, _, event in list(subscriber.events):  # nothing was missing: the next event to arrive
        if at > heal:
            published = reference.first_time(event.get("eventID")) or at
            return heal + max(0.0, at - max(heal, published))
    return None


def link_recovered(stack, link, heal):
    if link == "notify-sub":
        return subscriber_progress(stack, heal)
    service, counter, gauge, fallback = LINK_PROGRESS[link]
    return progress_moment(stack.services[service].sampler, counter, gauge, heal, fallback)


def measure_recovery(stack, links, heal, timeout):
    """Seconds from the heal until every link in `links` carries traffic again (the slowest), per link too."""
    moments = {}

    def all_flowing():
        for link in links:
            if link not in moments:
                moment = link_recovered(stack, link, heal)
                if moment is not None:
                    moments[link] = moment
        return len(moments) == len(links)

    poll_until(all_flowing, timeout)
    per_link = {link: (moments[link] - heal if link in moments else None) for link in links}
    slowest = None if None in per_link.values() else max(per_link.values())
    return slowest, per_link


def readiness_after(sampler, cut, until):
    """Seconds from the cut until /readyz first said 503, and until the unanswered gauge first passed 5 s."""
    gauge = UNANSWERED_GAUGE.get(sampler.service)
    not_ready = gauge_over = None
    gauge_seen = False
    for sample in sampler.since(cut):
        if sample.at > until:
            break
        if not_ready is None and sample.ready == 503:
            not_ready = sample.at - cut
        value = sample.value(gauge, max) if gauge and sample.metrics else None
        gauge_seen = gauge_seen or value is not None
        if gauge_over is None and value is not None and value > 5:
            gauge_over = sample.at - cut
    last = [sample for sample in sampler.samples if sample.at <= cut]
    return {"notReadySeconds": not_ready, "gaugeOver5Seconds": gauge_over, "gaugePresent": gauge_seen,
            "readyAtCut": last[-1].ready if last else None}


# MARK: Checks

ADDED_MEMBERS = {"position"}  # members a delivery may add to an event; none are expected inside the event itself


def compare_events(expected, tail):
    """Every expected eventID once, nothing else, the bodies equal to replay's."""
    counts = collections.Counter(tail.ids())
    got = {}
    for _, _, event in list(tail.events):
        got.setdefault(event.get("eventID"), event)
    missing = sorted(set(expected) - set(counts))
    extra = sorted(set(counts) - set(expected))
    twice = {event_id: count for event_id, count in counts.items() if count > 1}
    different, differences = [], {}
    for event_id in sorted(set(expected) & set(got)):
        body = {key: value for key, value in got[event_id].items() if key not in ADDED_MEMBERS}
        if body != expected[event_id]:
            different.append(event_id)
            differences[event_id] = member_differences(expected[event_id], body)
    return {"expected": len(expected), "got": sum(counts.values()), "distinct": len(counts),
            "missing": missing, "extra": extra, "duplicates": sum(count - 1 for count in twice.values()),
            "twice": twice, "different": different, "differences": differences,
            "missingKinds": dict(collections.Counter(expected[event_id]["event"] for event_id in missing))}


def member_differences(expected, got):
    """The members where an event differs from replay's: {member: [replay's value, the subscriber's]}, with the
    event's kind and user to say which one it is."""
    differing = {key: [expected.get(key), got.get(key)] for key in sorted(set(expected) | set(got))
                 if expected.get(key) != got.get(key)}
    return {"event": expected.get("event"), "user": expected.get("user"), "members": differing}


def detection_counts(sampler):
    """What detection could not apply, from its last sample: late records and every *unapplied* metric."""
    sample = sampler.latest()
    if sample is None:
        return {"late": None, "unapplied": None, "other": {}}
    other = {name: sum(value for _, value in values) for name, values in sample.metrics.items()
             if "unapplied" in name and name != "roadsave_detection_unapplied_records_total"}
    return {"late": sample.value("roadsave_detection_records_total", outcome="late"),
            "unapplied": sample.value("roadsave_detection_unapplied_records_total"),
            "forcedReleases": sample.value("roadsave_detection_watermark_forced_releases_total"),
            "other": other}


SUMMARY = re.compile(r"sent (\d+), accepted (\d+), rejected (\d+), batches (\d+)")


def send_result(name, popen, out_path, errors_path):
    with open(out_path) as handle:
        output = handle.read()
    match = SUMMARY.search(output)
    with open(errors_path, errors="replace") as handle:
        errors = handle.read().splitlines()
    result = {"name": name, "status": popen.returncode, "summary": match.group(0) if match else None,
              "warnings": len(errors), "lastError": errors[-1] if errors else None}
    if match:
        sent, accepted, rejected, _ = (int(group) for group in match.groups())
        result.update(sent=sent, accepted=accepted, rejected=rejected)
    result["allAccepted"] = bool(match) and popen.returncode == 0 and result["accepted"] == result["sent"] \
        and result["rejected"] == 0
    return result


def service_logs(service):
    lines = service.log_lines()
    errors = [line for line in lines if "level=error" in line]
    # The start line lists every setting (watermarkHold=...): not news.
    notable = [line for line in lines if re.search(r"watermark|unapplied", line, re.IGNORECASE)
               and "msg=starting" not in line]
    return {"errorLines": len(errors), "errors": errors[:50], "watermarkOrUnapplied": notable[:50],
            "watermarkOrUnappliedLines": len(notable)}


# MARK: The drills

class DrillResult(dict):
    """The figures of one drill (a dict, so it goes to --json as it is) and the reasons it failed."""

    def fail(self, reason):
        self.setdefault("failures", []).append(reason)


def stream_rate(workload, drill, options):
    """Records a second that make the fleet last LEAD + the cut + TAIL seconds."""
    return workload.fleet_records / float(options.lead + drill.seconds + options.tail)


def run_drill(drill, options, workload, keys, directory, tag):
    os.makedirs(directory, exist_ok=True)
    result = DrillResult(drill=drill.name, kind=drill.kind, link=drill.link, seconds=drill.seconds)
    stack = Stack(options, directory, tag, keys)
    started = time.monotonic()
    try:
        stack.start()
        log("%s: services ready, subscribers connected" % drill.name)
        if drill.kind == "idle":
            idle_drill(stack, drill, options, workload, result)
        else:
            partition_drill(stack, drill, options, workload, result)
    except DrillError as error:
        result.fail(str(error))
        log("%s: %s" % (drill.name, error))
    finally:
        finish(stack, result)
        result["wallSeconds"] = round(time.monotonic() - started, 1)
    verdict(drill, result)
    return result


def partition_drill(stack, drill, options, workload, result):
    """Cut (or degrade) a link LEAD seconds into the stream, heal it after the drill's seconds, measure."""
    rate = stream_rate(workload, drill, options)
    result["rate"] = round(rate, 1)
    send = stack.send("send", workload.fleet, rate)
    begun = time.monotonic()
    log("%s: sending %d records at %.0f/s" % (drill.name, workload.fleet_records, rate))
    ingest = stack.services["ingest"].sampler
    wait_until(lambda: ingest.latest() is not None
               and (ingest.latest().value("roadsave_ingest_records_accepted_total") or 0) > 0, options.lead,
               "the first records accepted")
    # The stimulus is timed (LEAD seconds into the stream); outcomes below are waited for, never slept for.
    sleep_until(begun + options.lead, stack)
    links = [drill.link] if drill.kind == "cut" else [name for name, _, _ in LINKS]
    cut = time.monotonic()
    if drill.kind == "cut":
        stack.topology.command("cut", drill.link)
        result["cutAt"] = round(cut - stack.origin, 1)
        log("%s: cut %s for %d s" % (drill.name, drill.link, drill.seconds))
    else:
        stack.topology.command("loss", "*", p=options.loss, delay=options.delay)
        result["cutAt"] = round(cut - stack.origin, 1)
        log("%s: %.0f %% loss, %.0f ms delay on every link for %d s"
            % (drill.name, options.loss * 100, options.delay * 1000, drill.seconds))
    sleep_until(cut + drill.seconds, stack)
    stack.topology.command("heal", "*")
    heal = time.monotonic()
    result["healAt"] = round(heal - stack.origin, 1)
    log("%s: healed" % drill.name)
    result["recoverySeconds"], result["recoveryPerLink"] = measure_recovery(stack, links, heal,
                                                                            options.recovery_timeout)
    log("%s: recovery %s s %s" % (drill.name, seconds_text(result["recoverySeconds"]),
                                  {link: seconds_text(value) for link, value in result["recoveryPerLink"].items()}))
    if drill.service_link:
        result["readiness"] = readiness_after(stack.services[drill.downstream].sampler, cut, heal)
        result["readinessSeconds"] = result["readiness"]["notReadySeconds"]
    wait_for_send(stack, send, drill, options)
    settle(stack, workload.fleet_events, options, drill)
    result["events"] = compare_events(workload.fleet_events, stack.tails["subscriber"])


def sleep_until(moment, stack):
    """Waits for a planned moment of the drill (a stimulus, not an outcome), failing early if a service dies."""
    while time.monotonic() < moment:
        for service in stack.services.values():
            if not service.alive():
                raise DrillError("%s exited during the drill (status %s)" % (service.name, service.popen.returncode))
        time.sleep(min(POLL, max(0.0, moment - time.monotonic())))


def wait_for_send(stack, send, drill, options):
    # The rest of the stream at its pace, then a generous bound for the resends of a gateway that was cut off.
    bound = options.lead + drill.seconds + options.tail + options.recovery_timeout + 120
    if poll_until(lambda: send.poll() is not None, bound) is None:
        raise DrillError("roadsave send still running %.0f s after it started" % bound)
    log("%s: send exited with %s" % (drill.name, send.returncode))


def settle(stack, expected, options, drill):
    """Waits until the subscriber has every expected event, or, when some never come (unapplied records), until the
    pipeline is quiet: detection read to the journal's head, the notifier and both subscribers unchanged for
    --settle seconds. Bounded by --settle-timeout."""
    subscriber, reference = stack.tails["subscriber"], stack.tails["reference"]
    detect, notify = stack.services["detect"].sampler, stack.services["notify"].sampler
    state = {"key": None, "since": time.monotonic()}

    def done():
        if set(expected) <= set(subscriber.ids()):
            return True
        sample_d, sample_n = detect.latest(), notify.latest()
        key = (len(subscriber.events), len(reference.events),
               sample_n.value("roadsave_notifier_events_stored_total") if sample_n else None,
               sample_d.value("roadsave_detection_records_read_total") if sample_d else None)
        if key != state["key"]:
            state.update(key=key, since=time.monotonic())
        lag = sample_d.value("roadsave_detection_lag_positions") if sample_d else None
        # Quiet is not enough (a link still in TCP backoff is quiet too): both services must also say ready, i.e.
        # detection read to the journal's head and the notifier to detection's.
        ready = sample_d is not None and sample_d.ready == 200 and sample_n is not None and sample_n.ready == 200
        return lag == 0 and ready and time.monotonic() - state["since"] >= options.settle

    if poll_until(done, options.settle_timeout) is None:
        log("%s: not settled within %d s; checking what arrived" % (drill.name, options.settle_timeout))
    got = len(set(expected) & set(subscriber.ids()))
    log("%s: subscriber has %d of %d expected events (reference %d)"
        % (drill.name, got, len(expected), len(set(expected) & set(reference.ids()))))


def idle_drill(stack, drill, options, workload, result):
    """A subscriber that only wants crashDetected hears nothing for --idle-seconds; the NAT on notify–sub forgets
    every flow; a crash is sent. Measures from the reference's print (the notifier published it) to the idle
    subscriber's."""
    stack.add_tail("idle", "sub", NOTIFY_PUBLISH, NOTIFY_CATCH_UP, ["--event", "crashDetected"])
    warmup = stack.send("send-warmup", workload.warmup)
    if poll_until(lambda: warmup.poll() is not None, 120) is None:
        raise DrillError("the warm-up send did not finish within 120 s")
    wait_until(lambda: set(workload.warmup_events) <= set(stack.tails["subscriber"].ids()), 120,
               "the warm-up fleet's %d events at the subscriber" % len(workload.warmup_events))
    quiet = time.monotonic()
    log("idle-subscriber: warm-up delivered; the idle subscriber has heard nothing; waiting %d s"
        % options.idle_seconds)
    sleep_until(quiet + options.idle_seconds, stack)
    forgotten = stack.topology.command("forget", "notify-sub")
    result["flowsForgotten"] = forgotten.get("forgotten", {}).get("notify-sub")
    forget = time.monotonic()
    log("idle-subscriber: the NAT forgot %s flows on notify-sub; sending the crash" % result["flowsForgotten"])
    crash = stack.send("send-crash", workload.crash)
    reference, idle = stack.tails["reference"], stack.tails["idle"]
    wait_until(lambda: reference.first_time(workload.crash_event_id) is not None, 180,
               "the notifier to publish the crash (reference subscriber)")
    published = reference.first_time(workload.crash_event_id)
    log("idle-subscriber: crash published %.1f s after the forget" % (published - forget))
    arrived = poll_until(lambda: idle.first_time(workload.crash_event_id) is not None, options.idle_timeout)
    result["crashLatencySeconds"] = None if arrived is None else idle.first_time(workload.crash_event_id) - published
    result["recoverySeconds"] = result["crashLatencySeconds"]
    log("idle-subscriber: the idle subscriber got the crash %s"
        % ("%.1f s after it was published" % result["crashLatencySeconds"] if arrived
           else "not within %d s of its publication" % options.idle_timeout))
    if poll_until(lambda: crash.poll() is not None, 120) is None:
        raise DrillError("the crash send did not finish within 120 s")
    expected = dict(workload.warmup_events, **workload.crash_events)
    settle(stack, expected, options, drill)
    result["events"] = compare_events(expected, stack.tails["subscriber"])
    crash_only = {workload.crash_event_id: workload.crash_events[workload.crash_event_id]}
    result["idleEvents"] = compare_events(crash_only, idle)


def finish(stack, result):
    """Final figures (before anything stops), then stop and remove everything; statuses and logs into result."""
    try:
        if "detect" in stack.services:
            result["detection"] = detection_counts(stack.services["detect"].sampler)
        result["forwarder"] = forwarder_figures(stack.topology, result)
    except Exception as error:
        result.setdefault("notes", []).append("final figures: %s" % error)
    result["services"] = {}
    result["readinessChanges"] = {name: service.sampler.readiness_changes(stack.origin)
                                  for name, service in stack.services.items()}
    result["series"] = {name: service.sampler.series(stack.origin, SERIES[name])
                        for name, service in stack.services.items()}
    running = {name: service.alive() for name, service in stack.services.items()}
    tails_running = {name: tail.popen.poll() is None for name, tail in stack.tails.items()}
    stack.close()
    for name, service in stack.services.items():
        entry = {"runningAtEnd": running[name], "exitStatus": service.exit_status, "killed": service.killed}
        entry.update(service_logs(service))
        result["services"][name] = entry
    result["sends"] = [send_result(*send) for send in stack.sends]
    result["subscribers"] = {name: dict(tail_summary(tail), runningAtEnd=tails_running[name])
                             for name, tail in stack.tails.items()}


def tail_summary(tail):
    """What a subscriber printed and said: its exit, its warnings and its reconnects (tail logs each catch-up)."""
    lines = [line for _, line in tail.errors]
    return {"events": len(tail.events), "exitStatus": tail.popen.returncode,
            "warnings": [line for line in lines if "level=warning" in line or "level=error" in line][:20],
            "reconnectCatchUps": sum(1 for line in lines if "reconnected" in line)}


def forwarder_figures(topology, result):
    """What the forwarder did: packets per link, drops by cause, its CPU share, and the kernel's drops on the TUN
    queues (non-zero when the forwarder did not keep up)."""
    stats = topology.stats()
    links = {}
    for name, link in stats["links"].items():
        totals = collections.Counter()
        for way in link["ways"].values():
            totals.update({key: value for key, value in way.items() if key != "held"})
        links[name] = dict(totals)
    return {"cpuSeconds": round(stats["cpu_seconds"], 2), "seconds": round(stats["seconds"], 1),
            "cpuShare": round(stats["cpu_seconds"] / max(stats["seconds"], 1e-9), 3),
            "longestBurst": stats["longest_burst"], "links": links, "kernelDrops": topology.kernel_drops()}


def verdict(drill, result):
    """PASS or FAIL against the targets, each failure with its reason."""
    recovery = result.get("recoverySeconds")
    if drill.kind == "idle":
        if recovery is None:
            result.fail("idle subscriber did not get the crash live")
        elif recovery > IDLE_CRASH_TARGET:
            result.fail("idle subscriber got the crash %.1f s after it was published (target %.0f s)"
                        % (recovery, IDLE_CRASH_TARGET))
        idle = result.get("idleEvents")
        if idle and (idle["duplicates"] or idle["extra"]):
            result.fail("idle subscriber printed the crash %d times / extra events" % idle["got"])
    elif "recoverySeconds" in result:
        if recovery is None:
            result.fail("no traffic over the healed link within the bound")
        elif recovery > RECOVERY_TARGET:
            result.fail("recovery %.1f s after the heal (target %.0f s)" % (recovery, RECOVERY_TARGET))
    if drill.service_link and "readiness" in result:
        ready = result["readinessSeconds"]
        if ready is None:
            result.fail("%s never said not ready (503) during the %d s cut" % (drill.downstream, drill.seconds))
        elif ready > READINESS_TARGET:
            result.fail("%s said 503 only %.1f s after the cut (target %.0f s)"
                        % (drill.downstream, ready, READINESS_TARGET))
    events = result.get("events")
    if events:
        for key, text in (("missing", "lost"), ("extra", "extra")):
            if events[key]:
                result.fail("%d events %s%s" % (len(events[key]), text,
                                                " (%s)" % events["missingKinds"] if key == "missing" else ""))
        if events["duplicates"]:
            result.fail("%d events twice" % events["duplicates"])
        if events["different"]:
            result.fail("%d events differ from replay's" % len(events["different"]))
    counts = result.get("detection") or {}
    unapplied = (counts.get("late") or 0) + (counts.get("unapplied") or 0) + sum((counts.get("other") or {}).values())
    result["unapplied"] = unapplied
    if unapplied:
        result.fail("%d records late/unapplied at detection" % unapplied)
    for send in result.get("sends", []):
        if not send["allAccepted"]:
            result.fail("%s: not every record acknowledged (exit %s, %s%s)"
                        % (send["name"], send["status"], send["summary"],
                           "; " + send["lastError"] if send["lastError"] and send["status"] else ""))
    for name, tail in result.get("subscribers", {}).items():
        if not tail["runningAtEnd"]:
            result.fail("the %s subscriber (roadsave tail) exited early with status %s" % (name, tail["exitStatus"]))
    for name, service in result.get("services", {}).items():
        if not service["runningAtEnd"]:
            result.fail("%s was not running at the end" % name)
        elif service["killed"] or service["exitStatus"] not in (0,):
            result.fail("%s did not stop cleanly (status %s%s)"
                        % (name, service["exitStatus"], ", killed" if service["killed"] else ""))
    result["verdict"] = "FAIL" if result.get("failures") else "PASS"


# MARK: Report

def table(results):
    header = ["drill", "recovery s", "readiness s", "gauge>5 s", "events got/expected", "dup", "missing",
              "unapplied", "verdict"]
    rows = [header]
    for result in results:
        events = result.get("events") or {}
        readiness = result.get("readiness") or {}
        rows.append([
            result["drill"], seconds_text(result.get("recoverySeconds")),
            seconds_text(result.get("readinessSeconds")) if readiness else "-",
            seconds_text(readiness.get("gaugeOver5Seconds")) if readiness else "-",
            "%s/%s" % (events.get("distinct", "?"), events.get("expected", "?")),
            str(events.get("duplicates", "?")), str(len(events.get("missing", []))) if events else "?",
            str(result.get("unapplied", "?")), result["verdict"]])
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def details(result):
    """The lines under the table for one drill: why it failed, and what the logs and the forwarder said."""
    lines = []
    for failure in result.get("failures", []):
        lines.append("  FAIL: " + failure)
    if result.get("recoveryPerLink") and len(result["recoveryPerLink"]) > 1:
        lines.append("  recovery per link: " + ", ".join("%s %s" % (link, seconds_text(value))
                                                         for link, value in result["recoveryPerLink"].items()))
    counts = result.get("detection") or {}
    if counts:
        lines.append("  detection: late %s, unapplied %s, watermark forced releases %s%s"
                     % (counts.get("late"), counts.get("unapplied"), counts.get("forcedReleases"),
                        ", " + str(counts["other"]) if counts.get("other") else ""))
    for send in result.get("sends", []):
        lines.append("  %s: exit %s, %s, %d warning lines" % (send["name"], send["status"], send["summary"],
                                                              send["warnings"]))
    for name, service in result.get("services", {}).items():
        lines.append("  %s: error lines %d, watermark/unapplied lines %d, exit %s%s"
                     % (name, service["errorLines"], service["watermarkOrUnappliedLines"], service["exitStatus"],
                        " (killed)" if service["killed"] else ""))
        for line in (service["errors"][:3] + service["watermarkOrUnapplied"][:3]):
            lines.append("      " + line[:300])
    for event_id, difference in list((result.get("events") or {}).get("differences", {}).items())[:3]:
        members = json.dumps(difference["members"])
        lines.append("  differs from replay: %s %s %s: %s" % (difference["event"], difference["user"], event_id,
                                                              members[:400]))
    if result.get("subscribers"):
        lines.append("  subscribers: " + ", ".join(
            "%s %d events, %d reconnect catch-ups, %d warnings" % (name, tail["events"], tail["reconnectCatchUps"],
                                                                 len(tail["warnings"]))
            for name, tail in result["subscribers"].items()))
    if "cutAt" in result:
        lines.append("  cut at %.1f s, healed at %.1f s (seconds since the services started)"
                     % (result["cutAt"], result["healAt"]))
    for name, changes in result.get("readinessChanges", {}).items():
        ready = next((index for index, (_, status, _) in enumerate(changes) if status == 200), len(changes))
        later = changes[ready + 1:]  # what /readyz said once the service had been ready
        if later:
            lines.append("  %s /readyz: %s" % (name, "; ".join("%.1f s %s %s" % (at, status, reason[:80])
                                                                  for at, status, reason in later)))
    forwarder = result.get("forwarder")
    if forwarder:
        dropped = {name: {key: value for key, value in link.items()
                          if key in ("dropped_cut", "dropped_loss", "dropped_forget")}
                   for name, link in forwarder["links"].items()}
        lines.append("  forwarder: cpu %.1f %% of %.0f s, longest burst %d, packets %s, dropped %s, kernel drops %s"
                     % (forwarder["cpuShare"] * 100, forwarder["seconds"], forwarder["longestBurst"],
                        {name: link.get("forwarded", 0) for name, link in forwarder["links"].items()},
                        {name: value for name, value in dropped.items() if value},
                        sum(value or 0 for value in forwarder["kernelDrops"].values())))
    for note in result.get("notes", []):
        lines.append("  note: " + note)
    return "\n".join(lines)


# MARK: Main

def preflight(options):
    """Root, /dev/net/tun, `ip netns`, the binaries: exit 2 with the reason when one is missing."""
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces and TUN devices)")
    if not os.path.exists("/dev/net/tun"):
        problems.append("/dev/net/tun does not exist")
    if not shutil.which("ip"):
        problems.append("no `ip` command (iproute2)")
    try:
        import prometheus_client.parser  # noqa: F401
    except ImportError:
        problems.append("python3 lacks prometheus_client (the metrics parser; pip install prometheus_client)")
    binary = os.path.join(options.bin, "roadsave")
    if not os.access(binary, os.X_OK):
        problems.append("%s is not an executable (build first, or give --bin)" % binary)
    if not problems:
        probe = "rsp-%d-probe" % os.getpid()
        CLEANUP.namespaces.append(probe)
        try:
            run(["ip", "netns", "add", probe])
            from tun_forwarder import open_tun
            os.close(open_tun("rsp%dprobe" % (os.getpid() % 10 ** 6)))
        except Exception as error:
            problems.append("cannot make a network namespace or a TUN device: %s" % error)
        finally:
            delete_namespace(probe)
    if problems:
        for problem in problems:
            print("partition-test: " + problem, file=sys.stderr)
        sys.exit(2)


def parse_service_args(text):
    name, _, arguments = text.partition("=")
    if name not in ("ingest", "detect", "notify", "send", "tail") or not arguments:
        raise argparse.ArgumentTypeError("--service-args NAME='ARGS', NAME one of ingest, detect, notify, send, tail")
    return name, shlex.split(arguments)


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=".build/debug", help="directory holding roadsave (default .build/debug)")
    parser.add_argument("--drills", default="all",
                        help="comma-separated drills to run, in this order (default all: %s)"
                        % ",".join(drill.name for drill in DRILLS))
    parser.add_argument("--runs", type=int, default=1, help="run the drills N times in a row (default 1)")
    parser.add_argument("--cut-seconds", type=float,
                        help="override every drill's cut (and the loss stretch) with S seconds, for short experiments")
    parser.add_argument("--json", help="write every figure of every run to FILE")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, outputs, data dirs)")
    parser.add_argument("--insecure", action="store_true", help="run without CurveZMQ keys (--insecure services)")
    parser.add_argument("--devices", type=int, default=50, help="simulated devices in the fleet (default 50)")
    parser.add_argument("--crashes", type=int, default=3, help="of which crash (default 3)")
    parser.add_argument("--minutes", type=int, default=20, help="simulated minutes of the fleet (default 20)")
    parser.add_argument("--seed", type=int, default=11, help="simulation seed (default 11)")
    parser.add_argument("--lead", type=float, default=30, help="seconds into the stream the cut starts (default 30)")
    parser.add_argument("--tail", type=float, default=40,
                        help="seconds the stream goes on after the heal, as planned (default 40)")
    parser.add_argument("--loss", type=float, default=0.3, help="share of packets lost in the loss drill (0.3)")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds of delay in the loss drill (0.2)")
    parser.add_argument("--idle-seconds", type=float, default=20,
                        help="how long the idle subscriber hears nothing before the forget (default 20)")
    parser.add_argument("--idle-timeout", type=float, default=60,
                        help="seconds after the crash is published before the idle subscriber not having it fails "
                             "the drill (default 60)")
    parser.add_argument("--send-attempts", type=int, default=20,
                        help="roadsave send --attempts: a gateway patient enough to outlast the cuts, so that a "
                             "give-up is not what the drill measures (default 20: with send's 10 s timeout and its "
                             "pauses, about 5 minutes)")
    parser.add_argument("--recovery-timeout", type=float, default=180,
                        help="seconds after a heal before traffic not flowing again fails the drill (default 180)")
    parser.add_argument("--settle", type=float, default=15,
                        help="seconds with nothing changing that count as settled when events are missing (15)")
    parser.add_argument("--settle-timeout", type=float, default=240,
                        help="longest wait for the subscriber to have everything after the send (default 240)")
    parser.add_argument("--service-args", action="append", type=parse_service_args, default=[],
                        metavar="NAME='ARGS'",
                        help="extra arguments for ingest, detect, notify, send or tail (repeatable), e.g. "
                             "detect='--link-timeout 5'")
    options = parser.parse_args()
    names = [drill.name for drill in DRILLS]
    wanted = names if options.drills == "all" else [name.strip() for name in options.drills.split(",") if name]
    unknown = [name for name in wanted if name not in names]
    if unknown:
        parser.error("unknown drill(s) %s; drills: %s" % (", ".join(unknown), ", ".join(names)))
    options.selected = []
    for name in wanted:
        drill = next(drill for drill in DRILLS if drill.name == name)
        if options.cut_seconds and drill.kind != "idle":
            drill = Drill(drill.name, drill.kind, drill.link, options.cut_seconds, drill.downstream)
        options.selected.append(drill)
    options.bin = os.path.abspath(options.bin)
    return options


def install_signal_handlers():
    """SIGTERM and SIGHUP end the run like Ctrl-C: the finally blocks and atexit remove what was made."""
    def stop(signum, _frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)


def main():
    options = parse_options()
    preflight(options)
    install_signal_handlers()
    atexit.register(CLEANUP.run)
    work = tempfile.mkdtemp(prefix="roadsave-partition-")
    if not options.keep:
        CLEANUP.directories.append(work)
    binary = os.path.join(options.bin, "roadsave")
    runs = []
    try:
        log("work directory %s; binaries %s; keys %s" % (work, options.bin, "off" if options.insecure else "on"))
        keys = None if options.insecure else make_keys(binary, os.path.join(work, "keys"))
        workload = Workload(binary, work, options)
        log("fleet: %d records, %d events expected (%s)"
            % (workload.fleet_records, len(workload.fleet_events),
               dict(collections.Counter(event["event"] for event in workload.fleet_events.values()))))
        for number in range(1, options.runs + 1):
            results = []
            for index, drill in enumerate(options.selected):
                log("run %d/%d: drill %s" % (number, options.runs, drill.name))
                directory = os.path.join(work, "run%d" % number, drill.name)
                result = run_drill(drill, options, workload, keys, directory, "%d%d" % (number, index))
                log("%s: %s%s" % (drill.name, result["verdict"],
                                  "" if result["verdict"] == "PASS" else ": " + "; ".join(result["failures"])))
                results.append(result)
                write_json(options, runs + [{"run": number, "drills": results}])
            runs.append({"run": number, "drills": results})
            print("\nRun %d of %d (binaries %s, %s):\n%s\n" % (number, options.runs, options.bin,
                                                             "insecure" if options.insecure else "CurveZMQ",
                                                             table(results)))
            for result in results:
                print(result["drill"] + ":\n" + details(result))
            print(flush=True)
    except KeyboardInterrupt:
        log("interrupted: cleaning up")
        return 130
    finally:
        write_json(options, runs)
        CLEANUP.run()
        if options.keep:
            log("kept %s" % work)
    failed = [result["drill"] + (" (run %d)" % entry["run"] if options.runs > 1 else "")
              for entry in runs for result in entry["drills"] if result["verdict"] != "PASS"]
    log("%s" % ("every drill passed" if not failed else "failed: " + ", ".join(failed)))
    return 0 if not failed else 1


def write_json(options, runs):
    if options.json:
        with open(options.json, "w") as handle:
            json.dump({"binaries": options.bin, "keys": not options.insecure, "runs": runs,
                       "targets": {"recoverySeconds": RECOVERY_TARGET, "readinessSeconds": READINESS_TARGET,
                                   "idleCrashSeconds": IDLE_CRASH_TARGET}}, handle, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
