#!/usr/bin/env python3
"""A webhook receiver on a given port, for a receiver that comes up late: the standard library only.

  python3 webhook_receiver_on_port.py --port PORT --secret SECRET

Like webhook_receiver.py (one JSON line per POST: status, event, eventID, signatureValid, body), but bound to
127.0.0.1:PORT, so the notifier can be given its URL before it runs. Prints the port on its first line.
"""
import signal

signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

import argparse
import hashlib
import hmac
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    parser = argparse.ArgumentParser(description="log signed webhook deliveries on a fixed port")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", required=True)
    options = parser.parse_args()
    secret = options.secret.encode()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            signature = self.headers.get("X-RoadSave-Signature", "")
            expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = body.decode("utf-8", "replace")
            with lock:
                print(json.dumps({"status": 200, "event": self.headers.get("X-RoadSave-Event"),
                                  "eventID": self.headers.get("X-RoadSave-Event-ID"),
                                  "signatureValid": hmac.compare_digest(signature, expected), "body": parsed}), flush=True)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    print(options.port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
