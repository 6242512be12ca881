#!/usr/bin/env python3
"""How the disk under a directory answers `fdatasync`: a write of SIZE bytes and an `fdatasync` every INTERVAL
milliseconds to a scratch file there, each timed, for SECONDS; prints the syncs' p50, p99, p99.9 and longest, and
how many took longer than --stall milliseconds. The services' durability waits for such syncs (ingest's group
commit before an acknowledgement, detection's outbox and the notifier's store before an alert), so a disk that
stalls every sync now and then shows in the crash alert's tail whatever the services do (docs/benchmarks.md).

  python3 scripts/disk_stalls.py [--directory DIR] [--seconds 60] [--interval 2] [--size 40000] [--stall 20]

The scratch file is removed at the end.
"""
import argparse
import os
import sys
import tempfile
import time

from benchkit import TimedSyncs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--directory", default=tempfile.gettempdir(), help="where the scratch file goes (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=60, help="how long to measure (default: %(default)s)")
    parser.add_argument("--interval", type=float, default=2, help="milliseconds from one sync to the next (default: %(default)s)")
    parser.add_argument("--size", type=int, default=40_000, help="bytes written before each sync (default: %(default)s, 20 MB/s at 2 ms)")
    parser.add_argument("--stall", type=float, default=20, help="a sync longer than this many milliseconds is a stall (default: %(default)s)")
    options = parser.parse_args()
    if options.seconds <= 0 or options.interval <= 0 or options.size <= 0 or options.stall <= 0:
        parser.error("--seconds, --interval, --size and --stall must be positive")
    if not os.path.isdir(options.directory):
        parser.error("--directory %s: no such directory" % options.directory)

    syncs = TimedSyncs(options.directory, options.size, options.interval / 1000, wrap=64 << 20)
    syncs.start()
    time.sleep(options.seconds)
    try:
        syncs.stop()
    except RuntimeError as error:
        sys.exit("disk_stalls.py: %s" % error)
    durations = syncs.durations()
    count = len(durations)

    def at(fraction):
        return durations[min(count - 1, int(fraction * count))] * 1000

    stalls = len(syncs.stalls(options.stall / 1000))
    print("%d syncs of %d bytes in %.0f s under %s: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, longest %.1f ms; %d over %.0f ms"
          % (count, options.size, options.seconds, options.directory, at(0.5), at(0.99), at(0.999), durations[-1] * 1000,
             stalls, options.stall))


if __name__ == "__main__":
    sys.exit(main())
