"""Serve moto's AWS emulation on loopback, one request at a time.

moto's own `moto_server` serves requests on several threads, and its Python
model is not atomic across them: two conditional writes can both pass their
condition. DynamoDB guarantees that each conditional write and each
transaction is atomic, and agentsfleet's limits depend on it, so tests and
the local stack run moto's own WSGI app one request at a time: connections
are served on threads of their own (HTTP/1.1, kept alive, so that an idle
or slow connection holds nobody else up), and a lock lets one request at a
time into moto.

DynamoDB also makes TransactWriteItems idempotent by its ClientRequestToken
(which the AWS SDKs fill in and keep across their retries): a transaction
repeated with the same token within ten minutes succeeds without being
applied again, and one with the same token and other parameters is refused
with IdempotentParameterMismatchException. moto applies every call, so a
retry after a lost answer would fail the conditions its first attempt made
true; Idempotent below does what DynamoDB does.

Usage: moto_server.py [--host 127.0.0.1] [--port 0]
Prints "listening on http://HOST:PORT" once the socket is bound.
"""

import argparse
import collections
import hashlib
import io
import json
import signal
import sys
import threading
import time

from werkzeug.serving import make_server

from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app


class Handler(MotoRequestHandler):
    """A connection that sends nothing for a minute is dropped, so that the
    thread of one a client abandoned ends."""

    timeout = 60


class Idempotent:
    """DynamoDB's ClientRequestToken for TransactWriteItems, in front of
    moto's app. Called inside the lock, so its cache needs none of its own."""

    target = "DynamoDB_20120810.TransactWriteItems"
    window = 600  # seconds, DynamoDB's idempotency window

    def __init__(self, app):
        self.app = app
        # token -> (expires, digest, status, headers, body), oldest first:
        # expiry times only grow, so the expired ones are at the front.
        self.seen = collections.OrderedDict()

    def __call__(self, environ, start_response):
        if environ.get("HTTP_X_AMZ_TARGET") != self.target:
            return list(self.app(environ, start_response))
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(raw)
        try:
            request = json.loads(raw)
        except ValueError:
            request = None
        token = request.get("ClientRequestToken") if isinstance(request, dict) else None
        if not token:
            return list(self.app(environ, start_response))
        del request["ClientRequestToken"]
        digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
        now = time.monotonic()
        while self.seen and next(iter(self.seen.values()))[0] <= now:
            self.seen.popitem(last=False)
        if token in self.seen:
            _, was, status, headers, body = self.seen[token]
            if was != digest:
                return mismatch(start_response)
            start_response(status, headers)
            return [body]
        answer = {}

        def keep(status, headers, exc_info=None):
            answer["status"], answer["headers"] = status, list(headers)
            return start_response(status, headers, exc_info)

        body = b"".join(self.app(environ, keep))
        if answer.get("status", "").startswith("200"):
            self.seen[token] = (now + self.window, digest, answer["status"], answer["headers"], body)
        return [body]


def mismatch(start_response):
    body = json.dumps({
        "__type": "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException",
        "message": "The request uses the same client token as a previous, but non-identical request.",
    }).encode()
    start_response("400 Bad Request", [
        ("Content-Type", "application/x-amz-json-1.0"),
        ("Content-Length", str(len(body))),
    ])
    return [body]


def copy_each_table_once() -> None:
    """moto's TransactWriteItems keeps a deep copy of a table, to roll back
    to, once for every item of the transaction that names it: a step's
    transaction of eight items copied the whole table eight times, so a
    commit cost grew with everything the table held (100 ms and more by the
    end of a benchmark). One copy per table per transaction is the same
    rollback. moto is entered by one request at a time (the lock in main),
    so swapping the module's deepcopy for the call races nobody."""
    import copy

    from moto.dynamodb import models

    transact = models.DynamoDBBackend.transact_write_items
    deepcopy = copy.deepcopy

    def once(self, transact_items):
        copies = {}

        def table_once(x, memo=None):
            if isinstance(x, models.Table):
                if id(x) not in copies:
                    copies[id(x)] = deepcopy(x)
                return copies[id(x)]
            return deepcopy(x, memo)

        models.copy.deepcopy = table_once
        try:
            return transact(self, transact_items)
        finally:
            models.copy.deepcopy = deepcopy

    models.DynamoDBBackend.transact_write_items = once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args()

    copy_each_table_once()
    app = Idempotent(DomainDispatcherApplication(create_backend_app))
    one_at_a_time = threading.Lock()

    def serialized(environ, start_response):
        # The whole answer is made inside the lock: moto's model is touched
        # by one request at a time, as DynamoDB's atomicity needs.
        with one_at_a_time:
            return app(environ, start_response)

    server = make_server(args.host, args.port, serialized, threaded=True,
                         request_handler=Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on http://{args.host}:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass


if __name__ == "__main__":
    main()
