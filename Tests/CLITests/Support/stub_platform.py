#!/usr/bin/env python3
"""A stand-in RoadSave platform for tests (PROTOCOL §5), written with the standard library only.

  python3 stub_platform.py [--verdict high|medium|low|none] [--fail-evaluations] [--fail-settings]
                           [--settings JSON]

Binds 127.0.0.1 on a free port and prints the port on its first line of output. Serves
  GET  /v1/settings?applicationID=...   -> the settings JSON (default {})
  POST /v1/crash-evaluations            -> {"verdict": VERDICT}, or 503 with --fail-evaluations
and logs each request as a JSON line on stdout: {"method": ..., "path": ..., "body": ...}.
"""
import argparse
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs


def main():
    # A parent that spawns us from a thread with signals blocked (Swift's test runner does) would leave SIGTERM
    # blocked here too, and the stub could not be stopped.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    parser = argparse.ArgumentParser()
    parser.add_argument("--verdict", default="high", choices=["high", "medium", "low", "none"])
    parser.add_argument("--fail-evaluations", action="store_true")
    parser.add_argument("--fail-settings", action="store_true")
    parser.add_argument("--settings", default="{}")
    options = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log(self, body):
            print(json.dumps({"method": self.command, "path": self.path, "body": body}), flush=True)

        def do_GET(self):
            url = urlparse(self.path)
            self.log(None)
            if url.path != "/v1/settings" or "applicationID" not in parse_qs(url.query):
                return self.reply(404, {"error": "not found"})
            if options.fail_settings:
                return self.reply(503, {"error": "down"})
            self.reply(200, json.loads(options.settings))

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            self.log(body)
            if self.path != "/v1/crash-evaluations":
                return self.reply(404, {"error": "not found"})
            if options.fail_evaluations:
                return self.reply(503, {"error": "down"})
            self.reply(200, {"verdict": options.verdict})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
