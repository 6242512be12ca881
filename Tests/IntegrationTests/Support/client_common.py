"""What the pyzmq scripts of this folder share (imported as a sibling: the tests run them as `python3 Support/x.py`).

CurveZMQ client sockets and their --server-key/--key flags, the report of a client's handshakes on standard error,
the msgpack frames of the pull feed (Shared/Wire/FeedMessages.swift), and the quiet exit of a script that a test
stops with SIGTERM.
"""
import json
import os
import sys
import threading

import msgpack
import zmq
import zmq.auth
from zmq.utils.monitor import recv_monitor_message


# MARK: CurveZMQ clients

def add_curve_arguments(parser, required=False):
    """--server-key (the server's public certificate file) and --key (this client's secret certificate file)."""
    parser.add_argument("--server-key", required=required,
                        help="the server's public certificate file: connect with CurveZMQ")
    parser.add_argument("--key", required=required,
                        help="this client's secret certificate file (default: a fresh, unlisted key pair)")


def server_key(path):
    """The public key in a certificate file (public or secret)."""
    return zmq.auth.load_certificate(path)[0]


def key_pair(path=None):
    """(public, secret) from a secret certificate file; without one, a fresh key pair nobody listed."""
    return zmq.auth.load_certificate(path) if path else zmq.curve_keypair()


def client_socket(context, kind, server=None, pair=None):
    """A socket of `kind` that drops unsent messages on close; a CURVE client of the server whose public key is
    `server` when that is given (as `pair`, or a fresh key pair nobody listed). Not connected: some callers set
    subscriptions or a monitor first."""
    sock = context.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    if server is not None:
        sock.curve_serverkey = server
        sock.curve_publickey, sock.curve_secretkey = pair if pair is not None else zmq.curve_keypair()
    return sock


def client_socket_from_options(context, kind, options):
    """`client_socket` from the files of --server-key and --key (plaintext without --server-key)."""
    if not options.server_key:
        return client_socket(context, kind)
    return client_socket(context, kind, server_key(options.server_key), key_pair(options.key))


# MARK: handshake reports

def watch(monitor):
    """Reports handshakes (and disconnections) of a client socket on standard error, as {"connected": ENDPOINT}
    and {"disconnected": true}: the tests wait for the first before they count on the connection."""
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


def report_handshakes(sock):
    """Starts `watch` on a monitor of `sock` (before it connects, so that the first handshake is seen)."""
    monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)
    threading.Thread(target=watch, args=(monitor,), daemon=True).start()


# MARK: the pull feed's frames

FETCH = b"fetch"  # first frame of a request: ["fetch", msgpack {id, feed, after, max, ack, wait, ...}]
FEED = b"feed"    # first frame of a reply: ["feed", msgpack {id, feed, after, to, head[, error]}, item, ...]


def pack(value):
    return msgpack.packb(value, use_bin_type=True)


def unpack(frame):
    return msgpack.unpackb(frame, raw=False)


# MARK: exit

def run_until_interrupted(main):
    """Runs `main` until it returns or SIGINT, then exits 0 at once (os._exit: a clean context teardown is not
    worth the wait in a script the test may have stopped)."""
    try:
        main()
    except KeyboardInterrupt:
        pass
    sys.stdout.flush()
    os._exit(0)


def exit_now(code):
    """Flushes standard output and exits with `code` at once (a monitor thread may still hold a socket)."""
    sys.stdout.flush()
    os._exit(code)
