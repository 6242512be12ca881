#!/usr/bin/env python3
"""A webhook receiver for the integration tests: the standard library's http.server (not the project's code).

  python3 webhook_receiver.py --secret SECRET [--fail-first N] [--port PORT]

Binds 127.0.0.1 on a free port, or on PORT (so the notifier can be given its URL before the receiver runs: one that
comes up late), and prints the port on its first line. For every POST it checks the signature
header X-RoadSave-Signature: "sha256=" + hex HMAC-SHA256(SECRET, body), and logs one JSON line:
{"path", "status" (what it answered), "event" (X-RoadSave-Event), "eventID" (X-RoadSave-Event-ID),
"signature", "signatureValid", "body" (parsed JSON, or the text when it is not JSON)}.
It answers 200, except the first --fail-first requests, which get 503 (to exercise the notifier's retries).
"""
import signal

# First thing: a process spawned from a thread of Swift's test runner inherits SIGTERM and SIGINT blocked.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import hashlib
import hmac
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    parser = argparse.ArgumentParser(description="log signed webhook deliveries")
    parser.add_argument("--secret", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    secret = options.secret.encode()
    lock = threading.Lock()
    state = {"requests": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            signature = self.headers.get("X-RoadSave-Signature", "")
            expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
            with lock:
                state["requests"] += 1
                status = 503 if state["requests"] <= options.fail_first else 200
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = body.decode("utf-8", "replace")
                print(json.dumps({
                    "path": self.path, "status": status,
                    "event": self.headers.get("X-RoadSave-Event"),
                    "eventID": self.headers.get("X-RoadSave-Event-ID"),
                    "contentType": self.headers.get("Content-Type"),
                    "signature": signature,
                    "signatureValid": hmac.compare_digest(signature, expected),
                    "body": parsed,
                }), flush=True)
            answer = b"{}"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    # A given port may have been another receiver's a moment ago.
    ThreadingHTTPServer.allow_reuse_address = options.port != 0
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
