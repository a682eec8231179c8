"""The HTTP stack's floor: `metalog serve`'s stack answering a command without Kafka.

Why: `bench.http` compares commands through `metalog serve` with the Python
client's. Where HTTP falls short, this says how much of the shortfall is the
HTTP stack itself on this machine: the same uvicorn server (h11, as
`server.run.server_for` sets it), the same FastAPI app factory's request
model for `AlterTable` (`server.commands.request_model`, validated from the
body), the same socket options, answering each POST with a fixed `Committed`
body, no leader, no Kafka; and the same stack with a bare ASGI function instead
of FastAPI (what the framework's layers cost).

Run by `bench.http --phases floor` in a child process (`--serve fastapi|asgi PORT`).
"""

# No `from __future__ import annotations`: FastAPI reads the route's body annotation
# (a model made at run time) as an object.

import json
import sys
from typing import Any

from fastapi import FastAPI
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from events import commands as c
from server.commands import request_model
from server.run import bind, server_for

ANSWER = {"type": "Committed", "command_id": "00000000-0000-0000-0000-000000000000",
          "catalog": "bench", "resource_version": 1, "tables": [{"table_id": 1, "version": 2}],
          "schema_epoch": 1}  # fmt: skip
"""The body every floor POST gets back: a `Committed` of the same shape and size."""


def fastapi_app() -> FastAPI:
    """One route, `POST /v1/catalogs/{catalog}/commands/AlterTable`, as the server declares it."""
    app = FastAPI()
    model = request_model(c.AlterTable)

    async def alter(catalog: str, body: model) -> JSONResponse:  # type: ignore[valid-type]
        return JSONResponse(ANSWER, headers={"ETag": '"1"'})

    app.add_api_route("/v1/catalogs/{catalog}/commands/AlterTable", alter, methods=["POST"])
    return app


async def asgi_app(scope: Scope, receive: Receive, send: Send) -> None:
    """The same answer from a bare ASGI function: the body read and parsed, nothing else."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    json.loads(body)
    payload = json.dumps(ANSWER).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"etag", b'"1"'),
                            (b"content-length", str(len(payload)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": payload})


def serve(kind: str, port: int) -> None:
    """(The child process) serve `kind`'s app on loopback `port` until terminated.

    `kind`: `fastapi` or `asgi` on uvicorn as `metalog serve` runs it; `granian-fastapi`
    or `granian-asgi` on Granian (a Rust HTTP server: one worker process, one runtime
    thread), the design alternative measured, when it is installed.
    """
    if kind.startswith("granian-"):
        from granian import Granian  # not a dependency: measured where installed
        from granian.constants import Interfaces

        target = "fastapi_app" if kind == "granian-fastapi" else "asgi_app"
        print("ready", flush=True)
        Granian(f"bench.http_floor:{target}", address="127.0.0.1", port=port,
                interface=Interfaces.ASGI, workers=1,
                factory=kind == "granian-fastapi").serve()  # fmt: skip
        return
    app: Any = fastapi_app() if kind == "fastapi" else asgi_app
    sock = bind("127.0.0.1", port)
    print("ready", flush=True)
    server_for(app).run(sockets=[sock])


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
