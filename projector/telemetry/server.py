"""`MetricsServer`: `/metrics`, `/healthz` and `/readyz` on a port, in a daemon thread."""

from __future__ import annotations

import errno
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

from prometheus_client import CollectorRegistry

from projector.errors import TelemetryError
from projector.telemetry.exposition import Check, always_ok, respond

log = logging.getLogger(__name__)


class MetricsServer:
    """Serves a registry and the health checks over HTTP (stdlib `ThreadingHTTPServer`).

    Nothing listens until `start`; `stop` closes the socket and joins the thread.

    Args:
        registry: What `/metrics` renders.
        port: The TCP port; 0 picks a free one (read `port` after `start`).
        host: The address to listen on (default loopback; `0.0.0.0` for a scraper
            on another machine).
        ready: The readiness check (`/readyz`).
        live: The liveness check (`/healthz`).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        port: int,
        *,
        host: str = "127.0.0.1",
        ready: Check = always_ok,
        live: Check = always_ok,
    ) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self.ready = ready
        self.live = live
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """`http://host:port` of the running server."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        """Listen and serve in a daemon thread.

        Raises:
            TelemetryError: The port is taken or the address cannot be bound.
        """
        if self._server is not None:
            return self
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                response = respond(self.path, owner.registry, owner.ready, owner.live)
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(response.body)))
                self.end_headers()
                self.wfile.write(response.body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("metrics endpoint: " + format, *args)

        try:
            server = ThreadingHTTPServer((self.host, self.port), Handler)
        except OSError as exc:
            taken = exc.errno == errno.EADDRINUSE
            raise TelemetryError(
                f"cannot serve metrics on {self.host}:{self.port}: "
                + ("the port is in use: pick another --metrics-port" if taken else str(exc))
            ) from exc
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.5},
            name="metalog-metrics", daemon=True,
        )  # fmt: skip
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(5.0)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
