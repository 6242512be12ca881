#!/usr/bin/env python3
"""The services benchmark behind `make bench`: records a second through sensor-ingest (journal on, fsync'd),
detection and the notifier, beside a bare acknowledging server measured with the same client in the same run.

  python3 scripts/bench_services.py [--bin .build/release] [--seconds 20] [--devices 2000] [--batch 1000] [--window 16]

Prints, for the same flooding gateway (Tests/IntegrationTests/Support/flood_gateway.py: pyzmq + msgpack, --window
batches in flight):
  - bare:      records a second acknowledged by `roadsave-bench ack-server` (receive, unpack and validate with
               msgpack-c, acknowledge; nothing stored);
  - services:  records a second acknowledged by sensor-ingest, and end to end (until detection has read and
               checkpointed the whole journal), each with its ratio to bare;
  - restart:   detection SIGKILLed in the middle of a second flood and started again: seconds from its restart to
               "caught up with the journals";
  - memory:    peak and final resident memory of each service.
Figures, not assertions: the machine is shared, so compare the ratios.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOOD = os.path.join(ROOT, "Tests", "IntegrationTests", "Support", "flood_gateway.py")


def free_ports(count):
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def flood(endpoint, options, seconds=None):
    command = [sys.executable, FLOOD, "--endpoint", endpoint, "--devices", str(options.devices),
               "--seconds", str(seconds or options.seconds), "--batch", str(options.batch),
               "--window", str(options.window)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def summary(process):
    out, _ = process.communicate()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return lines[-1]


def memory(pid):
    values = {}
    try:
        with open("/proc/%d/status" % pid) as handle:
            for line in handle:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    values[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return values


def query(path, sql):
    try:
        connection = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
        value = connection.execute(sql).fetchone()[0]
        connection.close()
        return value
    except sqlite3.Error:
        return None


class Services:
    def __init__(self, binaries, directory):
        self.binaries = binaries
        self.directory = directory
        ports = free_ports(6)
        self.endpoint = {name: "tcp://127.0.0.1:%d" % port
                         for name, port in zip(["gateway", "records", "control", "events", "publish", "catchup"], ports)}
        self.processes = {}
        self.logs = {}

    def start(self, name):
        arguments = {
            "ingest": ["--gateway-endpoint", self.endpoint["gateway"], "--records-endpoint", self.endpoint["records"]],
            "detect": ["--records-endpoint", self.endpoint["records"], "--control-endpoint", self.endpoint["control"],
                       "--events-endpoint", self.endpoint["events"]],
            "notify": ["--events-endpoint", self.endpoint["events"], "--publish-endpoint", self.endpoint["publish"],
                       "--catch-up-endpoint", self.endpoint["catchup"]],
        }[name]
        log = open(os.path.join(self.directory, name + ".log"), "a")
        environment = dict(os.environ, ROADSAVE_APPLICATIONS="demo-app", ROADSAVE_LOG_LEVEL="warning")
        if name == "detect":
            environment["ROADSAVE_LOG_LEVEL"] = "info"
        self.processes[name] = subprocess.Popen(
            [os.path.join(self.binaries, "roadsave-" + name)] + arguments
            + ["--data-dir", os.path.join(self.directory, name)], stdout=log, stderr=log, env=environment)
        self.logs[name] = log.name

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def journal_head(self):
        return query(os.path.join(self.directory, "ingest", "journal.sqlite"), "SELECT max(position) FROM chunks")

    def detection_position(self):
        return query(os.path.join(self.directory, "detect", "detection.sqlite"), "SELECT max(position) FROM positions")

    def wait_caught_up(self, timeout=600):
        head = self.journal_head()
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if head is not None and self.detection_position() == head:
                return time.monotonic() - start
            time.sleep(0.05)
        return None


def wait_listening(endpoints, timeout=20):
    start = time.monotonic()
    for endpoint in endpoints:
        port = int(endpoint.rsplit(":", 1)[1])
        while time.monotonic() - start < timeout:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser(description="records a second through the services, against a bare server")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--devices", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--window", type=int, default=16)
    options = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="roadsave-bench-")
    try:
        # Baseline: the bare acknowledging server.
        port = free_ports(1)[0]
        bare = subprocess.Popen([os.path.join(options.bin, "roadsave-bench"), "ack-server", "tcp://127.0.0.1:%d" % port],
                                stdout=subprocess.DEVNULL)
        wait_listening(["tcp://127.0.0.1:%d" % port])
        baseline = summary(flood("tcp://127.0.0.1:%d" % port, options))
        bare.kill()
        bare.wait()

        # The three services, journal on.
        services = Services(options.bin, directory)
        for name in ["notify", "detect", "ingest"]:
            services.start(name)
        wait_listening([services.endpoint[n] for n in ["gateway", "records", "events", "publish", "catchup"]])
        run = summary(flood(services.endpoint["gateway"], options))
        catch_up = services.wait_caught_up()
        peak = {name: memory(process.pid) for name, process in services.processes.items()}

        # Detection killed under load and started again.
        second = flood(services.endpoint["gateway"], options)
        time.sleep(options.seconds / 2)
        services.processes["detect"].kill()
        services.processes["detect"].wait()
        killed_at = time.monotonic()
        services.start("detect")
        second_run = summary(second)
        restart = None
        pattern = re.compile(r'msg="caught up with the journals" seconds=([0-9.]+)')
        while time.monotonic() - killed_at < 600 and restart is None:
            with open(services.logs["detect"]) as handle:
                found = pattern.findall(handle.read())
            # The first start logged one line; the restarted detection logs the second.
            if len(found) >= 2:
                restart = float(found[-1])
            time.sleep(0.1)
        final = {name: memory(process.pid) for name, process in services.processes.items()}
        services.stop()

        records = run["acknowledged"]
        end_to_end = records / (run["seconds"] + (catch_up or float("nan")))
        print("services benchmark: %d devices, batches of %d, %d in flight, %.0f s floods (release build)"
              % (options.devices, options.batch, options.window, options.seconds))
        print("bare      ack-server (unpack + validate + ack): %8.0f records/s" % baseline["rate"])
        print("services  acknowledged (journal fsync'd):       %8.0f records/s  (%.2f of bare)"
              % (run["rate"], run["rate"] / baseline["rate"]))
        print("services  end to end (detection read it all):   %8.0f records/s  (%.2f of bare); detection caught up %.1f s after the flood"
              % (end_to_end, end_to_end / baseline["rate"], catch_up or float("nan")))
        print("restart   detection SIGKILLed mid-flood: caught up %.1f s after its restart (the flood went on until %.1f s after the kill)"
              % (restart or float("nan"), second_run["seconds"] - options.seconds / 2))
        for name in ["ingest", "detect", "notify"]:
            print("memory    %-7s peak %5.0f MiB after the first flood, resident %5.0f MiB at the end"
                  % (name, peak[name].get("VmHWM", 0), final[name].get("VmRSS", 0)))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
