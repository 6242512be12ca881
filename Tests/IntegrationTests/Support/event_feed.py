#!/usr/bin/env python3
"""detection's outbox feed, faked for the notifier's integration tests: pyzmq and msgpack only (not the project's code).

  python3 event_feed.py --events FILE [--feed-id ID] [--rate N] [--paused | --step]

Binds a ROUTER on 127.0.0.1 (a free port, printed on the first line) and serves the events of FILE (a JSON list of
event maps with the MessagePack body fields of EventBody.encode: event, app, user, then tripID/startDate/...) as
the pull feed of Shared/Wire/FeedMessages.swift: request frames ["fetch", msgpack {id, feed, after, max, ack, wait,
...}], reply frames ["feed", msgpack {id, feed, after, to, head[, error]}, item, item, ...], each item one event's
MessagePack body. Position i (from 1) is the i-th event of FILE; the same event may appear twice (a redelivery).
With --rate, events are released at N a second from the start (the head grows); otherwise all at once. With
--paused, nothing is released until SIGUSR1, which is the start (a test starts the stream once its clients are
there, however long a busy machine took to start them). With --step, each SIGUSR1 releases one more event (a
test places each event in time, as a rare crash alert comes). A request
that finds nothing new is held up to its wait. Prints {"ack": N} whenever the consumer's acknowledged position
changes, and {"served": [after, to]} for each reply with events.
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked (and
# SIGUSR1, which --paused waits for).
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1})

import argparse
import json
import time

import zmq

from client_common import FEED, FETCH, pack, run_until_interrupted, unpack

FLOAT_FIELDS = {"startDate", "endDate", "distanceMetres", "detectedAt", "latitude", "longitude"}


def body(event):
    fields = {key: (float(value) if key in FLOAT_FIELDS and value is not None else value) for key, value in event.items()}
    return pack(fields)


def main():
    parser = argparse.ArgumentParser(description="serve a fixed list of events as detection's outbox feed")
    parser.add_argument("--events", required=True)
    parser.add_argument("--feed-id", default="fake-detection-feed")
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--paused", action="store_true")
    parser.add_argument("--step", action="store_true", help="one more event per SIGUSR1")
    options = parser.parse_args()
    with open(options.events) as file:
        items = [body(event) for event in json.load(file)]

    context = zmq.Context()
    socket = context.socket(zmq.ROUTER)
    socket.setsockopt(zmq.LINGER, 0)
    port = socket.bind_to_random_port("tcp://127.0.0.1")
    print(port, flush=True)
    start = None if options.paused or options.step else time.monotonic()
    stepped = 0
    held = {}  # identity -> (request, deadline)
    acknowledged = None

    def resume(*_):
        nonlocal start, stepped
        if options.step:
            stepped += 1
        elif start is None:
            start = time.monotonic()

    signal.signal(signal.SIGUSR1, resume)

    def released():
        if options.step:
            return min(len(items), stepped)
        if start is None:
            return 0
        if options.rate <= 0:
            return len(items)
        return min(len(items), int((time.monotonic() - start) * options.rate))

    def reply(identity, request, head, after, to, chosen, error=None):
        header = {"id": request["id"], "feed": options.feed_id, "after": after, "to": to, "head": head}
        if error:
            header["error"] = error
        socket.send_multipart([identity, FEED, pack(header)] + chosen)
        if chosen:
            print(json.dumps({"served": [after, to]}), flush=True)

    def serve(identity, request, may_hold):
        """True when answered."""
        nonlocal acknowledged
        head = released()
        after = request.get("after", 0)
        if request.get("feed") != options.feed_id:
            reply(identity, request, head, after, after, [])
            return True
        ack = request.get("ack", 0)
        if ack != acknowledged:
            acknowledged = ack
            print(json.dumps({"ack": ack}), flush=True)
        if after > head:
            reply(identity, request, head, after, after, [], f"position {after} is ahead of this feed's newest ({head})")
            return True
        chosen = items[after:min(head, after + request.get("max", 256))]
        if not chosen and may_hold:
            return False
        reply(identity, request, head, after, after + len(chosen), chosen)
        return True

    poller = zmq.Poller()
    poller.register(socket, zmq.POLLIN)
    while True:
        ready = dict(poller.poll(20))
        if socket in ready:
            while True:
                try:
                    frames = socket.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                identity, rest = frames[0], frames[1:]
                if rest and rest[0] == b"":
                    rest = rest[1:]
                if len(rest) != 2 or rest[0] != FETCH:
                    continue
                request = unpack(rest[1])
                held.pop(identity, None)
                if not serve(identity, request, request.get("wait", 0) > 0):
                    held[identity] = (request, time.monotonic() + request.get("wait", 0) / 1000)
        now = time.monotonic()
        for identity, (request, deadline) in list(held.items()):
            if serve(identity, request, now < deadline):
                del held[identity]


if __name__ == "__main__":
    run_until_interrupted(main)
