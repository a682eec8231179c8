"""`create_app`: the HTTP API of `metalog serve` in one function (mount more routers on it).

Routes (docs/http.md): writes under `/v1/catalogs/{catalog}/commands/{kind}`
(`server.commands`), reads (`server.reads`), SQL reads (`server.sql`), the watch
stream (`server.watch`), `/healthz`, `/readyz`, `/metrics` (`server.metrics`) and
`/openapi.json`. Every error
is an RFC 9457 problem (`server.problems`), FastAPI's validation errors included.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from prometheus_client import CollectorRegistry
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from events.errors import MetalogError
from projector.telemetry import respond
from server import commands, reads, sql, watch
from server.auth import Guard
from server.catalogs import Catalogs, ServerSettings
from server.errors import BadRequest, BodyTooLarge, NotFound, RequestInvalid, ServerError
from server.health import Readiness
from server.metrics import Measured, ServerMetrics
from server.problems import Problem, problem

log = logging.getLogger(__name__)


def create_app(
    settings: ServerSettings,
    *,
    leader_group: str | None = None,
    registry: CollectorRegistry | None = None,
) -> FastAPI:
    """The API for `settings`' catalogs; followers and clients start on first use.

    Args:
        settings: The cluster, the catalogs served and the limits.
        leader_group: The leaders' consumer group `/readyz` looks for (default
            `{prefix}-leaders`).
        registry: Where the server's metrics register (`/metrics` renders it);
            None: a registry of its own.
    """
    metrics = ServerMetrics(registry)
    catalogs = Catalogs(settings, metrics.followers)
    hub = watch.Hub(catalogs, metrics.watches)
    readiness = Readiness(catalogs, leader_group)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            hub.close()
            await run_in_threadpool(catalogs.close)

    app = FastAPI(
        title="metalog",
        version="1",
        summary="An event-sourced metadata log: commands, reads and watches over HTTP",
        lifespan=lifespan,
        # The server's metrics are its own (/metrics); FastAPI's native OpenTelemetry
        # looked for a provider on every request (3 % of its CPU under load).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.catalogs = catalogs
    app.state.hub = hub
    app.include_router(commands.router(catalogs))
    app.include_router(reads.router(catalogs, hub.open))
    app.include_router(sql.router(catalogs))
    app.include_router(watch.router(catalogs, hub))

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process is up and answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], responses={503: {"description": "not ready"}})
    async def readyz() -> JSONResponse:
        """The followers made so far are caught up and a leader is in its group."""
        report = await run_in_threadpool(readiness.check)
        return JSONResponse(report, status_code=200 if report["ready"] else 503)

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    async def prometheus() -> Response:
        """The server's and its followers' metrics, in Prometheus' text format."""
        page = await run_in_threadpool(respond, "/metrics", metrics.registry)
        return Response(page.body, status_code=page.status, media_type=page.content_type)

    _handlers(app)
    app.add_middleware(BodyLimit, limit=settings.max_body)
    if settings.users is not None:
        app.add_middleware(Guard, users=settings.users)
    app.add_middleware(Measured, metrics=metrics)
    app.openapi = lambda: _openapi(app, secured=settings.users is not None)  # type: ignore[method-assign]
    return app


def _handlers(app: FastAPI) -> None:
    async def metalog_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, MetalogError)
        return problem(exc)

    async def invalid(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = [dict(e) for e in exc.errors()]
        malformed = any(e.get("type") == "json_invalid" for e in errors)
        return problem(RequestInvalid(errors, malformed_json=malformed),
                       400 if malformed else None)  # fmt: skip

    async def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        error: ServerError = NotFound(
            "no such route: the routes are listed in /openapi.json (docs/http.md)"
        ) if exc.status_code == 404 else BadRequest(str(exc.detail))
        return problem(error, exc.status_code, headers=dict(exc.headers or {}))

    async def unexpected(_: Request, exc: Exception) -> Response:
        log.exception("unexpected error", exc_info=exc)
        return problem(MetalogError(f"internal error: {type(exc).__name__}: {exc} (a bug: "
                                    "please report it)"), 500)  # fmt: skip

    app.add_exception_handler(MetalogError, metalog_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


def _openapi(app: FastAPI, *, secured: bool) -> dict[str, Any]:
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary,
                             routes=app.routes)  # fmt: skip
        if secured:  # server.auth: a principal's name and password, or its password as a token
            schema.setdefault("components", {})["securitySchemes"] = {
                "basic": {"type": "http", "scheme": "basic"},
                "bearer": {"type": "http", "scheme": "bearer"},
            }
            schema["security"] = [{"basic": []}, {"bearer": []}]
        schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = (
            Problem.model_json_schema()
        )
        # FastAPI documents its own 422 with its HTTPValidationError body; ours is a problem.
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                answer = operation.get("responses", {}).get("422")
                if answer is not None and "application/json" in answer.get("content", {}):
                    del answer["content"]["application/json"]
        app.openapi_schema = schema
    return app.openapi_schema


class BodyLimit:
    """Refuses a request body larger than `limit` bytes with a 413 problem.

    It reads `Content-Length` first and counts a chunked body as it arrives.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await problem(BodyTooLarge(self.limit))(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge as exc:
            if started:
                raise
            await problem(exc)(scope, receive, send)
