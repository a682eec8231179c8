"""Writes: `POST /v1/catalogs/{catalog}/commands/{kind}`, one route per command kind.

The request body is the command's own model (`events.commands`) less what the
server stamps: `type` (the path says it), `command_id` (`Idempotency-Key`, or a
new one), `catalog` (the path), `actor` (the server's) and `reply_to`. Unknown
fields are refused, as the command models refuse them. The command goes through
the catalog's shared `MetadataClient`, the same path (validation, leader, reply)
as a Python service's.

Optimistic concurrency the HTTP way: `If-Match: "N"` is the catalog's
resource_version the write expects (the `ETag` of every read), the same as the
body's `expected_resource_version`; the body's `expected_version` is a table's.
"""

# No `from __future__ import annotations`: the route handlers below are made per
# kind, and FastAPI reads their annotations (the body model) as objects.

from collections.abc import Callable, Coroutine
from typing import Annotated, Any, get_args

from fastapi import APIRouter, Header, Request
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from starlette.responses import Response
from starlette.types import Scope

from events import commands as c
from events.replies import Committed
from server.auth import PRINCIPAL
from server.catalogs import Catalogs
from server.errors import PreconditionInvalid
from server.problems import COMMON, documented

STAMPED = frozenset({"type", "command_id", "catalog", "actor", "reply_to"})
"""Command fields the server fills in; a body may not carry them."""

KINDS: tuple[type[c.CommandBase], ...] = get_args(get_args(c.Command)[0])
"""Every command kind, in `events.commands.Command`'s order."""


def request_model(kind: type[c.CommandBase]) -> type[BaseModel]:
    """The body model of `kind`: its fields less `STAMPED`, unknown fields refused."""
    fields: dict[str, Any] = {
        name: (info.annotation, info)
        for name, info in kind.model_fields.items()
        if name not in STAMPED
    }
    return create_model(
        f"{kind.__name__}Request",
        __config__=ConfigDict(extra="forbid", frozen=True),
        __doc__=kind.__doc__,
        **fields,
    )


def expected_resource_version(if_match: str | None, body: int | None) -> int | None:
    """The catalog resource_version a write expects: `If-Match` and/or the body's.

    Raises:
        PreconditionInvalid: `If-Match` is not one resource_version, or differs from the body's.
    """
    if if_match is None:
        return body
    text = if_match.strip()
    if text.startswith("W/"):
        text = text[2:]
    text = text.strip('"')
    if not text.isdigit() or len(text) > 19:
        raise PreconditionInvalid(
            f"If-Match: {if_match!r} is not a resource_version: send the ETag of a read, "
            'such as If-Match: "12" (one value; `*` is not served)'
        )
    value = int(text)
    if body is not None and body != value:
        raise PreconditionInvalid(
            f"If-Match says resource_version {value} but the body's expected_resource_version "
            f"is {body}: send one of them, or the same value in both"
        )
    return value


async def answer(catalogs: Catalogs, kind: type[c.CommandBase], scope: Scope, body: BaseModel,
                 if_match: str | None, idempotency_key: str | None) -> Response:
    """Send the command of a validated request body and answer with its `Committed`."""
    fields = {name: getattr(body, name) for name in body.model_fields_set}
    expected = expected_resource_version(if_match, fields.pop("expected_resource_version", None))
    catalog = scope["path_params"]["catalog"]
    client = catalogs.client(catalog, scope.get(PRINCIPAL))
    command = client.command(kind, **fields, catalog=catalog, expected_resource_version=expected,
                             command_id=idempotency_key or None)  # fmt: skip
    committed: Committed = await client.send_async(command)
    return Response(committed.model_dump_json(), media_type="application/json",
                    headers={"ETag": f'"{committed.resource_version}"'})  # fmt: skip


class CommandRoute(APIRoute):
    """A command route whose well-formed requests skip FastAPI's request machinery.

    FastAPI's handler (dependencies, parameters, the body parsed then validated)
    took about a sixth of the server's CPU per command (docs/benchmarks/http.md). A
    request whose body is JSON (`Content-Type` absent or `application/json`) is
    validated here straight from its bytes against the same body model and answered
    the same way; any other request (a body that does not validate, another content
    type) goes to FastAPI's handler, so every error is the one FastAPI gives, and the
    OpenAPI document is the route's.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The request handler: `answer` for a valid JSON body, else FastAPI's."""
        slow = super().get_route_handler()
        catalogs, kind, model = self.endpoint.command  # type: ignore[attr-defined]

        async def handler(request: Request) -> Response:
            headers = request.headers
            if headers.get("content-type", "application/json") != "application/json":
                return await slow(request)
            try:
                body = model.model_validate_json(await request.body())
            except ValidationError:
                return await slow(request)  # reads the same body again (Request keeps it)
            return await answer(catalogs, kind, request.scope, body, headers.get("if-match"),
                                headers.get("idempotency-key"))  # fmt: skip

        return handler


def router(catalogs: Catalogs) -> APIRouter:
    """The write routes, one per command kind."""
    routes = APIRouter(prefix="/v1/catalogs/{catalog}/commands", tags=["commands"])
    for kind in KINDS:
        _add(routes, catalogs, kind)
    return routes


def _add(routes: APIRouter, catalogs: Catalogs, kind: type[c.CommandBase]) -> None:
    model = request_model(kind)

    async def send(
        request: Request,
        catalog: str,
        body: model,  # type: ignore[valid-type]
        if_match: Annotated[str | None, Header(description="the catalog resource_version "
                                               'expected, as an ETag: "12"')] = None,
        idempotency_key: Annotated[str | None, Header(description="the command id: a retry "
                                                      "with the same key is applied at most "
                                                      "once")] = None,
    ) -> Response:
        return await answer(catalogs, kind, request.scope, body, if_match, idempotency_key)

    send.command = (catalogs, kind, model)  # type: ignore[attr-defined]  # CommandRoute's
    routes.add_api_route(
        f"/{kind.__name__}",
        send,
        methods=["POST"],
        name=kind.__name__,
        summary=(kind.__doc__ or kind.__name__).strip().splitlines()[0],
        response_model=Committed,
        responses=documented(*COMMON, 409, 504),
        operation_id=f"command{kind.__name__}",
        route_class_override=CommandRoute,
    )
