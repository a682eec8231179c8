"""The server's Prometheus metrics: requests by route and status, their duration, open
watches, and its followers' collectors (docs/operations.md, "Metrics").

Labels stay bounded: a route is its template (`/v1/catalogs/{catalog}/tables`), never
the path a client sent, and a request that matched no route counts as `unmatched`.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from projector.follower.metrics import FollowerMetrics

REQUEST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0)  # fmt: skip
"""Seconds from a request's arrival to its response's last byte (watches excluded)."""


class ServerMetrics:
    """The collectors of one server, registered in `registry`.

    Args:
        registry: Where to register (the CLI's, or a library user's own); None
            makes a private one.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "metalog_server_requests_total",
            "HTTP requests answered, by method, route template and status code.",
            ["method", "route", "code"], registry=r,
        )  # fmt: skip
        self.request_seconds = Histogram(
            "metalog_server_request_duration_seconds",
            "Time to answer one HTTP request (watch streams excluded), by method and route.",
            ["method", "route"], buckets=REQUEST_BUCKETS, registry=r,
        )  # fmt: skip
        self.watches = Gauge("metalog_server_watches", "Watch streams open now.", registry=r)
        self.followers = FollowerMetrics(r)


class Measured:
    """ASGI middleware counting each HTTP request in `metrics` once it is answered."""

    def __init__(self, app: ASGIApp, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; count it with the route the router matched."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500  # what the client gets when the app raises before it answers

        async def noted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noted)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            method = scope["method"]
            self.metrics.requests.labels(method, route, str(status)).inc()
            if not route.endswith("/watch"):
                self.metrics.request_seconds.labels(method, route).observe(
                    time.perf_counter() - began)
