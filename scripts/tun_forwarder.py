#!/usr/bin/env python3
"""The links of `make partition-test`: one process that forwards IP packets between pairs of TUN devices, and cuts,
heals, degrades or "forgets" each link on command.

A link joins two network namespaces. Each end is a TUN device (IFF_TUN | IFF_NO_PI: bare IP packets, no packet
information header) that this process creates in the root namespace (ioctl TUNSETIFF on /dev/net/tun) and keeps
open; the harness then moves each device into its namespace (`ip link set DEV netns NS`), addresses it
point-to-point and brings it up. Moving a TUN device keeps its file descriptor working, so the packets a namespace
sends out of its end arrive here as reads of that end's fd, and what this process writes to the other end's fd
arrives in the other namespace as if it had come over a cable.

    python3 scripts/tun_forwarder.py --control SOCKET --link NAME=DEV_A,DEV_B [--link ...] [--mtu M]

prints one line of JSON, {"ready": true, ...}, once every device exists, then serves the control socket (a UNIX
stream socket, one JSON request a line, one JSON reply a line) until told to quit or until SIGTERM. Requests:

    {"op": "cut", "link": L}                drop every packet, both ways, silently (no RST, no ICMP): a cut cable;
                                            packets held for a delay are lost with it
    {"op": "heal", "link": L}               forward everything again (undoes cut, loss and forget)
    {"op": "loss", "link": L, "p": P, "delay": S}
                                            drop a share P (0..1) of packets at random, delay the rest S seconds,
                                            keeping their order in each direction
    {"op": "forget", "link": L}             a NAT that forgot its flows: every TCP flow (by 4-tuple) seen on the
                                            link so far is dropped silently, for ever; new connections pass
    {"op": "stats"}                         counters per link and direction, and this process's CPU seconds
    {"op": "ping"} / {"op": "quit"}

L is a link name or "*" for every link. Replies are {"ok": true, ...} or {"ok": false, "error": "..."}.

It is also a module: `open_tun(name)` and `Forwarder` are what the command uses, and `ForwarderClient` is how the
harness talks to the running process.
"""
import argparse
import collections
import errno
import fcntl
import json
import os
import random
import resource
import select
import signal
import socket
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
# Reads per fd per wake-up before serving the others: keeps one busy link from starving the rest.
READ_BURST = 256


def open_tun(name):
    """Creates the TUN device NAME (bare IP packets) in this thread's namespace and returns its non-blocking fd. The
    device lives as long as the fd is open (it is not made persistent), so nothing is left behind if we die."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


def tcp_flow(packet):
    """The direction-free 4-tuple of an IPv4 TCP packet, or None for anything else (IPv6 neighbour discovery,
    ICMP): what `forget` matches on."""
    if len(packet) < 20 or packet[0] >> 4 != 4 or packet[9] != 6:
        return None
    header = (packet[0] & 0x0F) * 4
    if len(packet) < header + 4:
        return None
    source, destination = packet[12:16], packet[16:20]
    source_port, destination_port = struct.unpack_from("!HH", packet, header)
    one, other = (source, source_port), (destination, destination_port)
    return (one, other) if one <= other else (other, one)


class Direction:
    """One way of a link: the fd packets are read from, the fd they are written to, the queue of delayed packets and
    the counters."""

    def __init__(self, name, source_fd, target_fd):
        self.name = name
        self.source_fd, self.target_fd = source_fd, target_fd
        self.held = collections.deque()  # (due, packet), in arrival order: order is kept even when delays change
        self.counts = collections.Counter()

    def summary(self):
        return dict(self.counts, held=len(self.held))


class Link:
    """A pair of TUN devices and what is done to the packets between them."""

    def __init__(self, name, device_a, device_b, mtu):
        self.name, self.devices, self.mtu = name, (device_a, device_b), mtu
        self.fds = (open_tun(device_a), open_tun(device_b))
        self.ways = (Direction(device_a + ">" + device_b, self.fds[0], self.fds[1]),
                     Direction(device_b + ">" + device_a, self.fds[1], self.fds[0]))
        self.heal()
        self.flows = set()  # every TCP 4-tuple seen: what a `forget` forgets
        self.forgotten = set()

    def heal(self):
        self.mode, self.loss, self.delay = "pass", 0.0, 0.0
        self.forgotten = set()

    def cut(self):
        self.mode = "cut"
        for way in self.ways:  # what was on the wire is lost with the cable
            way.counts["dropped_cut"] += len(way.held)
            way.held.clear()

    def degrade(self, loss, delay):
        self.mode, self.loss, self.delay = "loss", loss, delay

    def forget(self):
        self.forgotten = set(self.flows)
        return len(self.forgotten)

    def way_from(self, fd):
        return self.ways[0] if fd == self.fds[0] else self.ways[1]

    def take(self, way, packet, now):
        """Decides one packet's fate: dropped (and why), held for a delay, or written now."""
        flow = tcp_flow(packet)
        if flow is not None:
            self.flows.add(flow)
            if flow in self.forgotten:
                way.counts["dropped_forget"] += 1
                return
        if self.mode == "cut":
            way.counts["dropped_cut"] += 1
            return
        if self.mode == "loss" and random.random() < self.loss:
            way.counts["dropped_loss"] += 1
            return
        if self.delay > 0 or way.held:
            way.held.append((now + self.delay, packet))
            return
        write(way, packet)

    def release(self, now):
        """Writes the held packets that are due, oldest first; returns when the next one is due (or None)."""
        following = None
        for way in self.ways:
            while way.held and way.held[0][0] <= now:
                write(way, way.held.popleft()[1])
            if way.held:
                following = way.held[0][0] if following is None else min(following, way.held[0][0])
        return following

    def stats(self):
        return {"mode": self.mode, "loss": self.loss, "delay": self.delay, "devices": list(self.devices),
                "flows": len(self.flows), "forgotten": len(self.forgotten),
                "ways": {way.name: way.summary() for way in self.ways}}

    def close(self):
        for fd in self.fds:
            os.close(fd)


def write(way, packet):
    try:
        os.write(way.target_fd, packet)
        way.counts["forwarded"] += 1
        way.counts["bytes"] += len(packet)
    except OSError as error:
        # The far end is down (EIO before `ip link set up`) or its queue is full: the wire ate it.
        way.counts["dropped_write_" + errno.errorcode.get(error.errno, str(error.errno))] += 1


class Forwarder:
    """Every link, the control socket and the loop that serves them (epoll; one process for all links so that a
    command acts on every link at the same instant, and the packet counts are in one place)."""

    def __init__(self, links, control_path, mtu=1500):
        self.links = {}
        for name, (device_a, device_b) in links.items():
            self.links[name] = Link(name, device_a, device_b, mtu)
        self.by_fd = {}
        for link in self.links.values():
            for fd in link.fds:
                self.by_fd[fd] = link
        self.control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control.bind(control_path)
        self.control.listen(8)
        self.control.setblocking(False)
        self.clients = {}  # fd -> (socket, buffered bytes)
        self.poll = select.epoll()
        for fd in self.by_fd:
            self.poll.register(fd, select.EPOLLIN)
        self.poll.register(self.control.fileno(), select.EPOLLIN)
        self.started = time.monotonic()
        self.wakeups, self.longest_burst, self.running = 0, 0, True

    def serve(self):
        following = None
        while self.running:
            timeout = -1 if following is None else max(0.0, following - time.monotonic())
            try:
                events = self.poll.poll(timeout if timeout >= 0 else 1.0)
            except InterruptedError:
                continue
            self.wakeups += 1
            for fd, _ in events:
                if fd in self.by_fd:
                    self.pump(fd)
                elif fd == self.control.fileno():
                    self.accept()
                else:
                    self.answer(fd)
            now = time.monotonic()
            following = None
            for link in self.links.values():
                due = link.release(now)
                if due is not None:
                    following = due if following is None else min(following, due)

    def pump(self, fd):
        link = self.by_fd[fd]
        way = link.way_from(fd)
        now = time.monotonic()
        for count in range(READ_BURST):
            try:
                packet = os.read(fd, 65536)
            except BlockingIOError:
                break
            except OSError:  # EIO while the device is down: nothing to read
                break
            link.take(way, packet, now)
        else:
            count = READ_BURST
        self.longest_burst = max(self.longest_burst, count)

    def accept(self):
        try:
            client, _ = self.control.accept()
        except BlockingIOError:
            return
        client.setblocking(False)
        self.clients[client.fileno()] = (client, b"")
        self.poll.register(client.fileno(), select.EPOLLIN)

    def answer(self, fd):
        client, buffered = self.clients[fd]
        try:
            data = client.recv(65536)
        except BlockingIOError:
            return
        if not data:
            self.poll.unregister(fd)
            client.close()
            del self.clients[fd]
            return
        buffered += data
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            try:
                reply = self.command(json.loads(line))
            except Exception as error:  # a bad request is answered, never fatal
                reply = {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}
            client.setblocking(True)
            client.sendall(json.dumps(reply).encode() + b"\n")
            client.setblocking(False)
        self.clients[fd] = (client, buffered)

    def targets(self, request):
        name = request.get("link", "*")
        if name == "*":
            return list(self.links.values())
        if name not in self.links:
            raise KeyError("no link %r (links: %s)" % (name, ", ".join(self.links)))
        return [self.links[name]]

    def command(self, request):
        op = request.get("op")
        if op == "ping":
            return {"ok": True}
        if op == "stats":
            usage = resource.getrusage(resource.RUSAGE_SELF)
            return {"ok": True, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                    "seconds": time.monotonic() - self.started, "wakeups": self.wakeups,
                    "longest_burst": self.longest_burst,
                    "links": {name: link.stats() for name, link in self.links.items()}}
        if op == "quit":
            self.running = False
            return {"ok": True}
        links = self.targets(request)
        result = {"ok": True, "links": [link.name for link in links]}
        for link in links:
            if op == "cut":
                link.cut()
            elif op == "heal":
                link.heal()
            elif op == "loss":
                loss, delay = float(request.get("p", 0)), float(request.get("delay", 0))
                if not 0 <= loss <= 1 or not 0 <= delay <= 60:
                    raise ValueError("p must be within 0..1 and delay within 0..60 s")
                link.degrade(loss, delay)
            elif op == "forget":
                result.setdefault("forgotten", {})[link.name] = link.forget()
            else:
                raise ValueError("unknown op %r" % op)
        return result

    def close(self):
        for client, _ in self.clients.values():
            client.close()
        self.control.close()
        for link in self.links.values():
            link.close()
        self.poll.close()


class ForwarderClient:
    """The harness's side of the control socket: one request, one reply."""

    def __init__(self, path, timeout=10.0):
        self.path, self.timeout = path, timeout

    def request(self, op, **fields):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(self.timeout)
            connection.connect(self.path)
            connection.sendall(json.dumps(dict(fields, op=op)).encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = connection.recv(1 << 20)
                if not chunk:
                    break
                reply += chunk
        answer = json.loads(reply)
        if not answer.get("ok"):
            raise RuntimeError("forwarder refused %s: %s" % (op, answer.get("error")))
        return answer


def parse_link(text):
    name, _, devices = text.partition("=")
    device_a, _, device_b = devices.partition(",")
    if not (name and device_a and device_b) or len(device_a) > 15 or len(device_b) > 15:
        raise argparse.ArgumentTypeError("--link NAME=DEV_A,DEV_B (device names of at most 15 characters)")
    return name, (device_a, device_b)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--control", required=True, help="path of the UNIX control socket to create")
    parser.add_argument("--link", action="append", type=parse_link, required=True, metavar="NAME=DEV_A,DEV_B",
                        help="a link and its two TUN devices (repeat for each link)")
    parser.add_argument("--mtu", type=int, default=1500, help="MTU the harness gives the devices (reported only)")
    options = parser.parse_args()
    # SIGTERM ends the loop like "quit", so the fds are closed and the devices disappear.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(0)))
    forwarder = Forwarder(dict(options.link), options.control, options.mtu)
    try:
        print(json.dumps({"ready": True, "pid": os.getpid(), "links": {name: list(link.devices)
                                                                         for name, link in forwarder.links.items()}}),
              flush=True)
        forwarder.serve()
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        forwarder.close()
        try:
            os.unlink(options.control)
        except OSError:
            pass


if __name__ == "__main__":
    main()
