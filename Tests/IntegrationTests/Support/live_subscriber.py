#!/usr/bin/env python3
"""A subscriber for the live-publish security tests: pyzmq only (not the project's code).

  python3 live_subscriber.py --endpoint tcp://127.0.0.1:5554 --server-key SERVER.key.pub --key CLIENT.key
                             [--subscribe PREFIX ...] [--unsubscribe PREFIX@SECONDS ...] [--timeout S]

An XSUB socket, so nothing is filtered on this side: every message the notifier sends is printed, as one JSON line
{"t": seconds since start, "topic": TOPIC, "position": P}. Subscribes to each --subscribe prefix (none: everything),
and at each PREFIX@SECONDS sends the unsubscription of PREFIX, printing {"t": …, "unsubscribed": PREFIX}.
Prints {"connected": ENDPOINT} on standard error when the handshake is done. Exits after --timeout seconds.
"""
import signal

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import os
import sys
import threading
import time

import zmq
import zmq.auth
from zmq.utils.monitor import recv_monitor_message


def watch(monitor):
    while True:
        try:
            event = recv_monitor_message(monitor)
        except zmq.ZMQError:
            return
        if event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            address = event["endpoint"].decode() if isinstance(event["endpoint"], bytes) else event["endpoint"]
            print(json.dumps({"connected": address}), file=sys.stderr, flush=True)
        elif event["event"] == zmq.EVENT_DISCONNECTED:
            print(json.dumps({"disconnected": True}), file=sys.stderr, flush=True)
        elif event["event"] == zmq.EVENT_MONITOR_STOPPED:
            return


def main():
    parser = argparse.ArgumentParser(description="print every message the notifier sends to this subscriber")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--server-key", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--subscribe", action="append", default=[])
    parser.add_argument("--unsubscribe", action="append", default=[], help="PREFIX@SECONDS")
    parser.add_argument("--timeout", type=float, default=20.0)
    options = parser.parse_args()

    context = zmq.Context()
    socket = context.socket(zmq.XSUB)
    socket.setsockopt(zmq.LINGER, 0)
    socket.curve_serverkey = zmq.auth.load_certificate(options.server_key)[0]
    socket.curve_publickey, socket.curve_secretkey = zmq.auth.load_certificate(options.key)
    monitor = socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)
    threading.Thread(target=watch, args=(monitor,), daemon=True).start()
    # XSUB keeps its subscriptions and sends them on every (re)connection.
    for prefix in options.subscribe or [""]:
        socket.send(b"\x01" + prefix.encode())
    socket.connect(options.endpoint)

    pending = sorted((float(item.rsplit("@", 1)[1]), item.rsplit("@", 1)[0]) for item in options.unsubscribe)
    start = time.monotonic()
    while True:
        now = time.monotonic() - start
        while pending and pending[0][0] <= now:
            prefix = pending.pop(0)[1]
            socket.send(b"\x00" + prefix.encode())
            print(json.dumps({"t": now, "unsubscribed": prefix}), flush=True)
        limit = min([options.timeout] + [at for at, _ in pending])
        if now >= options.timeout:
            break
        if not socket.poll(max(1, int((limit - now) * 1000))):
            continue
        frames = socket.recv_multipart()
        position = int(frames[2]) if len(frames) == 3 else None
        print(json.dumps({"t": time.monotonic() - start, "topic": frames[0].decode("utf-8", "replace"),
                          "position": position}), flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
