"""`/metrics`, `/healthz` and `/readyz` as plain responses, for any HTTP server.

No web framework here: `respond(path, …)` returns the status, content type and
body, so the stdlib server (`projector.telemetry.server`) and an ASGI app serve
the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], tuple[bool, str]]
"""A health check: (healthy, why). `why` is one line an operator can act on."""


def always_ok() -> tuple[bool, str]:
    """The check of a process with nothing to wait for."""
    return True, "ok"


_TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP response: status, content type and body."""

    status: int
    content_type: str
    body: bytes


def respond(
    path: str,
    registry: CollectorRegistry,
    ready: Check = always_ok,
    live: Check = always_ok,
) -> Response:
    """The response to a GET of `path` (the query string is ignored).

    Args:
        path: `/metrics` (Prometheus' text format of `registry`), `/healthz`
            (`live`: 200 or 503) or `/readyz` (`ready`: 200 or 503); anything
            else is a 404.
        registry: The registry whose collectors `/metrics` renders.
        ready: Whether the process should get traffic (readiness).
        live: Whether the process is alive at all (liveness: a failed one must
            be restarted).
    """
    route = path.split("?", 1)[0].rstrip("/") or "/"
    if route == "/metrics":
        return Response(200, CONTENT_TYPE_LATEST, generate_latest(registry))
    if route in ("/healthz", "/readyz"):
        check = live if route == "/healthz" else ready
        try:
            healthy, why = check()
        except Exception as exc:  # a check that breaks says so instead of hiding the page
            healthy, why = False, f"the check failed: {type(exc).__name__}: {exc}"
        status = 200 if healthy else 503
        return Response(status, _TEXT, f"{'ok' if healthy else 'not ok'}: {why}\n".encode())
    return Response(404, _TEXT, b"not found: try /metrics, /healthz or /readyz\n")
