"""Serve moto's AWS emulation on loopback, one request at a time.

moto's own `moto_server` serves requests on several threads, and its Python
model is not atomic across them: two conditional writes can both pass their
condition. DynamoDB guarantees that each conditional write and each
transaction is atomic, and agentsfleet's limits depend on it, so tests and
the local stack run moto's own WSGI app one request at a time: connections
are served on threads of their own (HTTP/1.1, kept alive, so that an idle
or slow connection holds nobody else up), and a lock lets one request at a
time into moto.

Usage: moto_server.py [--host 127.0.0.1] [--port 0]
Prints "listening on http://HOST:PORT" once the socket is bound.
"""

import argparse
import signal
import sys
import threading

from werkzeug.serving import make_server

from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app


class Handler(MotoRequestHandler):
    """A connection that sends nothing for a minute is dropped, so that the
    thread of one a client abandoned ends."""

    timeout = 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args()

    app = DomainDispatcherApplication(create_backend_app)
    one_at_a_time = threading.Lock()

    def serialized(environ, start_response):
        # The whole answer is made inside the lock: moto's model is touched
        # by one request at a time, as DynamoDB's atomicity needs.
        with one_at_a_time:
            return list(app(environ, start_response))

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
