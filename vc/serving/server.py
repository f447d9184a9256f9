"""Run the `vc serve` app on a threaded HTTP server that answers even its own refusals in JSON."""

from __future__ import annotations

import json
import logging
import sys

from werkzeug.serving import WSGIRequestHandler, make_server

from vc.serving.app import Limits, create_app
from vc.serving.catalog import ModelCatalog
from vc.serving.hosts import is_loopback

log = logging.getLogger(__name__)


class JsonErrorHandler(WSGIRequestHandler):
    """Requests the server refuses before the app sees them (a header line too long, too many headers,
    a malformed request line) get a JSON body like every other error, not an HTML page."""

    def send_error(self, code, message=None, explain=None):
        body = json.dumps({"error": message or self.responses.get(code, ("error",))[0]}).encode()
        self.close_connection = True
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client has gone
            pass

    def log(self, type, message, *args):  # werkzeug's per-request lines go to the debug log, not stderr
        log.debug(message, *args)


def build_server(
    host: str, port: int, catalog: ModelCatalog, limits: Limits | None = None, allow_hosts: tuple = ()
):
    """The server (not yet serving): ``server.serve_forever()``; ``server.port`` is the bound port.

    Bound to a loopback address, it answers only requests whose Host is a loopback name or one of
    ``allow_hosts`` (vc/serving/hosts.py); bound to another address, any Host unless ``allow_hosts``
    lists the names it is reached by.
    """
    checked = tuple(allow_hosts) if is_loopback(host) or allow_hosts else None
    app = create_app(catalog, limits, allow_hosts=checked)
    return make_server(host, port, app, threaded=True, request_handler=JsonErrorHandler)


def serve(
    host: str, port: int, catalog: ModelCatalog, limits: Limits | None = None, allow_hosts: tuple = ()
) -> None:
    """Serve until interrupted; prints the URL (and a warning when other machines can reach it)."""
    server = build_server(host, port, catalog, limits, allow_hosts)
    if not is_loopback(host):
        print(
            f"WARNING: serving on {host}: anyone who can reach this machine can use it and upload to it; "
            "use --host 127.0.0.1 to keep it local",
            file=sys.stderr,
        )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    count = len(catalog.entries)
    print(
        f"vc serve: http://{shown}:{server.port}/  ({count} model{'s' * (count != 1)}; Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()
