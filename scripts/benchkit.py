"""What the benchmark scripts share: free loopback ports, waiting for a listener, a process's memory, a read-only
query of a service's SQLite store, the machine's load, and the disk's syncs timed."""

import json
import os
import resource
import socket
import sqlite3
import tempfile
import threading
import time


def free_ports(count):
    """`count` distinct loopback ports free right now."""
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


def free_base_port(count=6):
    """A port P with P..P+count-1 free (roadsave up takes consecutive ports)."""
    for _ in range(200):
        base = free_ports(1)[0]
        if base + count >= 65535:
            continue
        ok = True
        for port in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no run of free ports")


def wait_listening(endpoints, timeout=30):
    """Waits (at most `timeout` seconds in all) until each tcp://host:port endpoint accepts a connection."""
    start = time.monotonic()
    for endpoint in endpoints:
        port = int(endpoint.rsplit(":", 1)[1])
        while time.monotonic() - start < timeout:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)


def memory(pid):
    """VmRSS (now) and VmHWM (peak) of a process, in bytes; empty once it is gone."""
    values = {}
    try:
        with open("/proc/%d/status" % pid) as handle:
            for line in handle:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    values[line.split(":")[0]] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return values


def query(path, sql, parameters=()):
    """The first column of the first row of `sql` (with `parameters`) on the database at `path`, read-only; None if
    there is none or the database cannot be read (yet)."""
    try:
        connection = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
        row = connection.execute(sql, parameters).fetchone()
        connection.close()
        return row[0] if row else None
    except sqlite3.Error:
        return None


def cpu_seconds(pid):
    """User and system CPU seconds a running process has used; None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    """User and system CPU seconds of this process's children that have ended (around a client run: its own)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_average():
    """The one-minute load average."""
    return round(os.getloadavg()[0], 2)


def detection_applied(store):
    """The journal position detection has applied, from its store `store` (its detection.sqlite; the inputs are in
    outbox.sqlite beside it): its last records input, else its checkpoint (inputs wait at most 50 ms to be stored;
    checkpoints may be spaced by seconds under load)."""
    inputs = os.path.join(os.path.dirname(store), "outbox.sqlite")
    body = query(inputs, "SELECT body FROM inputs WHERE kind = 'records' ORDER BY seq DESC LIMIT 1")
    applied = query(store, "SELECT max(position) FROM positions") or 0
    if body:
        applied = max(applied, json.loads(body)["records"]["to"])
    return applied


class TimedSyncs(threading.Thread):
    """Writes `size` bytes and calls `fdatasync` every `interval` seconds to a scratch file in `directory` (removed
    when stopped), timing each sync: how the disk under the services answers the syncs their durability waits for.
    The writes go round the first `wrap` bytes of the file."""

    def __init__(self, directory, size, interval, wrap):
        super().__init__(daemon=True)
        self.directory, self.size, self.interval, self.wrap = directory, size, interval, wrap
        self.syncs = []  # (start, end), monotonic seconds
        self.stopping = threading.Event()
        self.error = None

    def run(self):
        try:
            handle, path = tempfile.mkstemp(prefix="disk-syncs-", dir=self.directory)
        except OSError as error:
            self.error = error
            return
        block, offset = b"\0" * self.size, 0
        try:
            while not self.stopping.is_set():
                start = time.monotonic()
                os.pwrite(handle, block, offset)
                os.fdatasync(handle)
                end = time.monotonic()
                self.syncs.append((start, end))
                offset = (offset + self.size) % self.wrap
                self.stopping.wait(max(0.0, self.interval - (end - start)))
        except OSError as error:
            self.error = error
        finally:
            os.close(handle)
            os.unlink(path)

    def stop(self):
        """Stops the syncs; raises what stopped them early (a full or read-only disk), if anything did."""
        self.stopping.set()
        self.join()
        if self.error is not None:
            raise RuntimeError("syncs under %s: %s" % (self.directory, self.error))

    def durations(self):
        """Each sync's seconds, sorted."""
        return sorted(end - start for start, end in self.syncs)

    def stalls(self, threshold):
        """The syncs that took longer than `threshold` seconds, as (start, end)."""
        return [(start, end) for start, end in self.syncs if end - start > threshold]
