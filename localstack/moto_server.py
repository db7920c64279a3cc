"""Serve moto's AWS emulation on loopback, one request at a time.

moto's own `moto_server` serves requests on several threads, and its Python
model is not atomic across them: two conditional writes can both pass their
condition. DynamoDB guarantees that each conditional write and each
transaction is atomic, and agentsfleet's limits depend on it, so tests and
the local stack serve moto single-threaded over moto's own WSGI app.

Usage: moto_server.py [--host 127.0.0.1] [--port 0]
Prints "listening on http://HOST:PORT" once the socket is bound.
"""

import argparse
import signal
import sys

from werkzeug.serving import make_server

from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app


class Handler(MotoRequestHandler):
    """One request per connection, and a connection that sends nothing for
    a few seconds is dropped: served one at a time, an idle connection (a
    client's dial that its caller gave up on) would otherwise hold every
    other client until the client closed it."""

    timeout = 5

    def run_wsgi(self) -> None:
        # The request line has come: the body and the answer may wait on a
        # client slowed by a busy machine far longer than an idle dial may
        # hold the server. A send cut at 5 s left a client a truncated
        # answer (a bad CRC32), whose retry of a conditional write that had
        # landed then failed its own condition.
        self.connection.settimeout(120)
        super().run_wsgi()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args()

    app = DomainDispatcherApplication(create_backend_app)
    server = make_server(args.host, args.port, app, threaded=False,
                         request_handler=Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on http://{args.host}:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass


if __name__ == "__main__":
    main()
