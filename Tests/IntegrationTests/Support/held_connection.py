#!/usr/bin/env python3
"""One CurveZMQ connection held open across an allow-list reload, for the security tests: pyzmq and msgpack only (not
the project's code).

  python3 held_connection.py --protocol gateway|control|catch-up|feed --endpoint E --server-key SERVER.key.pub
                             --key CLIENT.key --request JSON [--request JSON ...] --hold-before N --go FILE
                             [--timeout S] [--wait S]

Sends the requests in order on one socket (one connection), each after the reply to the one before. Before request N
(0-based) it prints {"holding": N} and waits until FILE exists (the test creates it once the service has re-read its
allow-list; at most --wait seconds, then {"notResumed": true} and exit). Each reply is printed as one JSON line,
{"index": i, "reply": ...}, or {"index": i, "timeout": true} when none came within --timeout seconds (then exit).
Standard error has {"connected": ENDPOINT} for each handshake (client_common.report_handshakes), so a test can tell
that every reply came over the one connection.

What a request is, by protocol:
  gateway   a JSON array of records, sent by a DEALER as [batchID "held-i", "application/json", body]; the reply is the
            acknowledgement
  control   a command object, sent by a REQ as one JSON frame; the reply is detection's JSON answer
  catch-up  a catch-up request object, by a REQ; the reply is the notifier's JSON answer
  feed      a feed request map, by a DEALER as ["fetch", msgpack map] (a "feed" of "@" is replaced by the feed the
            last reply named); the reply is {"header": {...}, "items": N}
Exit status 0 when every request was answered, 1 otherwise, 2 for bad usage.
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import json
import os
import time

import zmq

from client_common import FETCH, add_curve_arguments, client_socket_from_options, exit_now, pack, report_handshakes, unpack


def main():
    parser = argparse.ArgumentParser(description="one CurveZMQ connection held open across a reload")
    parser.add_argument("--protocol", required=True, choices=["gateway", "control", "catch-up", "feed"])
    parser.add_argument("--endpoint", required=True)
    add_curve_arguments(parser, required=True)
    parser.add_argument("--request", action="append", required=True)
    parser.add_argument("--hold-before", type=int, required=True)
    parser.add_argument("--go", required=True)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--wait", type=float, default=60.0)
    options = parser.parse_args()

    kind = zmq.DEALER if options.protocol in ("gateway", "feed") else zmq.REQ
    socket = client_socket_from_options(zmq.Context(), kind, options)
    report_handshakes(socket)
    socket.connect(options.endpoint)
    feed = None
    for index, text in enumerate(options.request):
        request = json.loads(text)
        if index == options.hold_before:
            print(json.dumps({"holding": index}), flush=True)
            deadline = time.monotonic() + options.wait
            while not os.path.exists(options.go):
                if time.monotonic() > deadline:
                    print(json.dumps({"notResumed": True}), flush=True)
                    exit_now(1)
                time.sleep(0.02)
        if options.protocol == "gateway":
            socket.send_multipart([b"held-%d" % index, b"application/json", json.dumps(request).encode()])
        elif options.protocol == "feed":
            if request.get("feed") == "@":
                request["feed"] = feed
            socket.send_multipart([FETCH, pack(request)])
        else:
            socket.send(json.dumps(request).encode())
        if not socket.poll(int(options.timeout * 1000)):
            print(json.dumps({"index": index, "timeout": True}), flush=True)
            exit_now(1)
        frames = socket.recv_multipart()
        if options.protocol == "feed":
            header = unpack(frames[1])
            feed = header.get("feed")
            reply = {"header": header, "items": len(frames) - 2}
        else:
            reply = json.loads(frames[-1])
        print(json.dumps({"index": index, "reply": reply}), flush=True)
    exit_now(0)


if __name__ == "__main__":
    main()
