#!/usr/bin/env python3
"""Writes the small hand-narrated record files that the replay end-to-end tests run on.

Kept beside the fixtures so their content can be read and regenerated: `python3 make_fixtures.py`.
Physically consistent: one fix a second, positions follow the speeds along a heading from Cape Town.

- morning.ndjson: two devices.
  user-walker: walks 60 s to the car, drives ~7 min with a 60 s red light (automotive reported with stationary),
               parks and walks away (steps end the trip at once).
  user-crash:  drives 3 min at 15 m/s, a 45 g / 90 ms impact, then standstill (a crash).
  Plus, on purpose: a line that is not JSON, a latitude out of range, an unknown kind, a duplicate (same seq)
  and records shifted up to 2 s out of order.
"""
import json
import math
import os

START = 1772433000.0  # 2026-03-02T06:30:00Z
R = 6371008.8


class Device:
    def __init__(self, user, lat, lon, heading):
        self.user, self.lat, self.lon, self.heading = user, lat, lon, heading
        self.t = START
        self.seq = 0
        self.steps = 500
        self.records = []

    def add(self, kind, **fields):
        record = {"kind": kind, "app": "demo-app", "user": self.user, "seq": self.seq, "t": round(self.t, 3)}
        record.update(fields)
        self.records.append(record)
        self.seq += 1

    def move(self, metres):
        h = math.radians(self.heading)
        self.lat += metres * math.cos(h) / R * 180 / math.pi
        self.lon += metres * math.sin(h) / (R * math.cos(math.radians(self.lat))) * 180 / math.pi

    def fix(self, speed):
        self.add("location", lat=round(self.lat, 7), lon=round(self.lon, 7), speed=round(speed, 2),
                 course=self.heading, hacc=5)

    def drive(self, seconds, speed):
        for _ in range(seconds):
            self.move(speed)
            self.t += 1
            self.fix(speed)

    def ramp(self, v0, v1, seconds):
        for i in range(1, seconds + 1):
            v = v0 + (v1 - v0) * i / seconds
            self.move(v)
            self.t += 1
            self.fix(v)

    def stand(self, seconds):
        for _ in range(seconds):
            self.t += 1
            self.fix(0)

    def walk(self, seconds):
        for i in range(1, seconds + 1):
            self.move(1.4)
            self.t += 1
            self.fix(1.4)
            if i % 2 == 0:
                self.steps += 4
                self.add("steps", steps=self.steps)


def walker():
    d = Device("user-walker", -33.9249, 18.4241, 90)
    d.add("capabilities", activityAvailable=True, pedometerAvailable=True)
    d.add("activity", activity="walking", confidence="high")
    d.walk(60)
    d.add("activity", activity="automotive", confidence="medium")
    d.ramp(2.5, 13, 8)
    d.drive(20, 13)
    d.add("activity", activity="automotive", confidence="high")
    d.drive(150, 13)
    d.ramp(13, 0, 5)
    d.add("activity", activity="automotive", confidence="medium")
    d.add("activity", activity="stationary", confidence="high")
    d.stand(60)
    d.add("activity", activity="automotive", confidence="high")
    d.ramp(2.5, 13, 6)
    d.drive(150, 13)
    d.ramp(13, 2, 6)
    d.stand(15)
    d.add("activity", activity="walking", confidence="high")
    d.walk(60)
    return d


def crasher():
    d = Device("user-crash", -33.95, 18.47, 0)
    d.t += 30
    d.add("activity", activity="automotive", confidence="high")
    d.ramp(2, 15, 10)
    d.drive(180, 15)
    d.t += 0.4
    samples = []
    for i in range(-100, 201):
        dt = i / 100
        x = 45 * math.cos(math.pi * dt / 0.09) if abs(dt) <= 0.045 else 0.0
        samples.append([round(dt, 3), round(x, 3), 0.0, 0.0 if abs(dt) <= 0.045 else 1.0])
    d.add("impact", peakG=45.0, durationMs=90, samples=samples)
    d.t += 0.6
    d.ramp(5, 0, 2)
    d.add("activity", activity="stationary", confidence="high")
    d.stand(60)
    return d


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    records = walker().records + crasher().records
    records.sort(key=lambda r: (r["t"], r["user"], r["seq"]))
    # Gateway disorder: every 7th record arrives 2 s late; one record is sent twice.
    arrival = [(r["t"] + (2.0 if i % 7 == 3 else 0.0), i, r) for i, r in enumerate(records)]
    arrival.sort(key=lambda a: (a[0], a[1]))
    lines = [json.dumps(r, separators=(",", ":")) for _, _, r in arrival]
    lines.insert(40, lines[39])  # duplicate (same seq)
    bad = [
        '{"kind":"location","app":"demo-app","user":"user-walker","t":1772433010.5,"lat":95.1,"lon":18.4}',
        'this is not JSON',
        '{"kind":"teleport","app":"demo-app","user":"user-walker","t":1772433011.5}',
    ]
    lines[5:5] = bad
    with open(os.path.join(here, "morning.ndjson"), "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
