"""Every metalog error as one HTTP status and an RFC 9457 problem body: the one mapping table.

A problem body is `application/problem+json`: `type` (a URN naming the error),
`title` (the error's name), `status`, `detail` (the message: what broke and the
fix), `error` (metalog's error name) and the error's own fields, such as
`current_resource_version` of a `VersionConflict` or `command_id` of a
`CommandOutcomeUnknown`. Clients branch on `status` and `error`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.responses import JSONResponse

from events.errors import MetalogError
from producers import errors as pe
from producers.sql.engine import QueryError
from producers.sql.errors import SqlError
from projector import errors as fe
from server import errors as se

PROBLEM_JSON = "application/problem+json"

STATUS: tuple[tuple[type[MetalogError], int], ...] = (
    # The write path: conditions on the current state fail → 409 Conflict.
    (pe.VersionConflict, 409),
    (pe.NameTaken, 409),
    (pe.PartitionExists, 409),
    (pe.ColumnExists, 409),
    (pe.NotDropped, 409),
    (pe.RouteChanged, 409),
    (pe.NoAttributes, 409),
    (pe.WrongPublishMode, 409),
    (pe.ChangesPending, 409),
    (pe.NothingToPublish, 409),
    (pe.EpochRegression, 409),
    (pe.EpochNotAboveStable, 409),
    (pe.PublishOutOfOrder, 409),
    # … a named thing does not exist → 404.
    (pe.TableNotFound, 404),
    (pe.PartitionNotFound, 404),
    (pe.ColumnNotFound, 404),
    (pe.RegionNotFound, 404),
    # … the command is malformed on its own → 413 / 422.
    (pe.TooLarge, 413),
    (pe.InvalidCommand, 422),
    (pe.InvalidAttributes, 422),
    (pe.PoisonCommand, 400),
    (pe.InternalError, 500),
    (pe.CommandRejected, 422),
    # … the outcome or the leader is out of reach.
    (pe.CommandOutcomeUnknown, 504),
    (pe.LeaderUnavailable, 503),
    (fe.ClusterUnavailable, 503),
    (pe.NotLeader, 503),
    (fe.AccessDenied, 403),
    # The read path.
    (fe.ResourceVersionTooOld, 410),
    (fe.WaitTimeout, 504),
    (fe.FollowerError, 503),
    (fe.ApplyError, 503),
    (SqlError, 400),
    (QueryError, 400),
    # The server's own refusals.
    (se.SignInFailed, 401),
    (se.PermissionDenied, 403),
    (se.RequestInvalid, 422),
    (se.BodyTooLarge, 413),
    (se.CatalogNotServed, 404),
    (se.NotFound, 404),
    (se.BadRequest, 400),
    (se.SlowReader, 503),
    (MetalogError, 500),
)
"""The status of each metalog error, most specific first (the first match wins)."""


class Problem(BaseModel):
    """An RFC 9457 problem body with metalog's error name and the error's fields."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    error: str


def status_of(error: MetalogError) -> int:
    """The HTTP status of `error` (`STATUS`)."""
    return next(code for kind, code in STATUS if isinstance(error, kind))


def problem_body(error: MetalogError, status: int | None = None) -> dict[str, Any]:
    """The problem body of `error`: RFC 9457's members, `error`, and the error's fields."""
    name = type(error).__name__
    code = status if status is not None else status_of(error)
    body: dict[str, Any] = {
        "type": f"urn:metalog:error:{name}",
        "title": name,
        "status": code,
        "detail": str(error),
        "error": name,
    }
    for field, value in vars(error).items():
        if field.startswith("_") or field in body or field == "message":
            continue
        if value is None or isinstance(value, str | int | float | bool):
            body[field] = value
        elif isinstance(value, list | tuple) and all(isinstance(v, dict) for v in value):
            body[field] = [_plain(v) for v in value]
    return body


def problem(error: MetalogError, status: int | None = None,
            headers: dict[str, str] | None = None) -> JSONResponse:  # fmt: skip
    """The `application/problem+json` response of `error`."""
    body = problem_body(error, status)
    return JSONResponse(body, status_code=body["status"], media_type=PROBLEM_JSON,
                        headers=headers)  # fmt: skip


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """A validation error entry as JSON (pydantic's may hold tuples and exceptions)."""
    return {
        "loc": [str(p) if not isinstance(p, int) else p for p in item.get("loc", ())],
        "msg": str(item.get("msg", "")),
        "type": str(item.get("type", "")),
    }


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries: each status a problem body (`application/problem+json`)."""
    schema = {"$ref": "#/components/schemas/Problem"}
    return {
        code: {"description": _DESCRIPTIONS.get(code, "a problem"),
               "content": {PROBLEM_JSON: {"schema": schema}}}
        for code in statuses
    }  # fmt: skip


_DESCRIPTIONS = {
    400: "malformed request (JSON text, a header, a query parameter)",
    401: "no credentials, or ones that match no principal (a secured server)",
    403: "the principal may not do this (PermissionDenied), or the cluster refused it",
    404: "no such catalog, table or route",
    409: "a condition on the current state failed (VersionConflict carries the current version)",
    410: "resourceVersion older than the server keeps (`oldest` says what it keeps)",
    413: "body or command too large",
    422: "the body breaks the schema or a rule of names, counts or ranges",
    500: "an unexpected error (a bug)",
    503: "the leader or the follower is not reachable",
    504: "no outcome in time (CommandOutcomeUnknown: retry with `command_id`) or a wait timed out",
}

COMMON = (400, 401, 403, 404, 413, 422, 500, 503)
"""Statuses any route may answer."""
