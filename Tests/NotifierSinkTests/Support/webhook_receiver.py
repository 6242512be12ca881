#!/usr/bin/env python3
"""A webhook receiver for the NotifierSinks tests, written with the standard library only.

  python3 webhook_receiver.py --secret-hex HEX [--signature-header NAME]
                              [--fail-first N] [--fail-every N] [--fail-event ID]... [--fail-status CODE]
                              [--retry-after SECONDS] [--reject-event ID]... [--redirect-event ID]...
                              [--delay SECONDS] [--delay-first N]

Binds 127.0.0.1 on a free port and prints the port on its first line of output. Every POST is checked against
HMAC-SHA256(secret, body) ("sha256=" + hex in the signature header) and answered:
  - after --delay seconds (only the first --delay-first requests when that is given);
  - 400 when its X-RoadSave-Event-ID is one of --reject-event; 302 to /elsewhere when one of --redirect-event;
  - --fail-status (503 by default, with Retry-After when --retry-after is given) for the first --fail-first requests,
    for every --fail-every-th request, and for every request of a --fail-event ID;
  - 200 otherwise.
It exits by itself when its parent process goes away. Each request is logged as one JSON line on stdout, just before its answer is sent:
  {"n", "method", "path", "headers": {lowercased names of interest}, "raw": body text, "body": parsed JSON or null,
   "signatureValid", "status", "arrived", "answered"}   (times: time.time() seconds)
"""
import argparse
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HEADERS = ["content-type", "user-agent", "x-roadsave-event", "x-roadsave-event-id", "retry-after", "x-tenant",
           "authorization"]


def main():
    # Swift's test runner spawns us from a thread with SIGTERM and SIGINT blocked, and we would inherit that mask.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # If the test process dies without killing us, don't linger (an orphan would also hold the test runner's pipes).
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    parser = argparse.ArgumentParser()
    parser.add_argument("--secret-hex", required=True)
    parser.add_argument("--signature-header", default="X-RoadSave-Signature")
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--fail-event", action="append", default=[])
    parser.add_argument("--fail-status", type=int, default=503)
    parser.add_argument("--retry-after", default=None)
    parser.add_argument("--reject-event", action="append", default=[])
    parser.add_argument("--redirect-event", action="append", default=[])
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--delay-first", type=int, default=None)
    options = parser.parse_args()
    secret = bytes.fromhex(options.secret_hex)
    lock = threading.Lock()
    counter = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            arrived = time.time()
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            with lock:
                counter[0] += 1
                n = counter[0]
            given = self.headers.get(options.signature_header, "")
            expected = "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
            valid = hmac.compare_digest(given, expected)
            event_id = self.headers.get("X-RoadSave-Event-ID", "")

            if options.delay > 0 and (options.delay_first is None or n <= options.delay_first):
                time.sleep(options.delay)

            status = 200
            if event_id in options.reject_event:
                status = 400
            elif event_id in options.redirect_event:
                status = 302
            elif (n <= options.fail_first or (options.fail_every and n % options.fail_every == 0)
                  or event_id in options.fail_event):
                status = options.fail_status
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            record = {
                "n": n, "method": self.command, "path": self.path,
                "headers": {name: self.headers.get(name) for name in HEADERS if self.headers.get(name) is not None},
                "signature": given, "raw": raw.decode("utf-8", "replace"), "body": body,
                "signatureValid": valid, "status": status, "arrived": arrived, "answered": time.time(),
            }
            with lock:
                print(json.dumps(record), flush=True)
            answer = json.dumps({"ok": status == 200}).encode()
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "/elsewhere")
            if status == options.fail_status and options.retry_after is not None:
                self.send_header("Retry-After", options.retry_after)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
