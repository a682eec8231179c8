"""`POST /v1/catalogs/{catalog}/sql`: SELECT and SHOW statements over the follower's image.

The statements go through the SQL engine `metalog sql` uses (`producers.sql`
parses TiDB's dialect, `producers.sql.engine` runs DuckDB over the image's
relations). Statements that write are refused here (400 `NotAQuery`): write
with the command routes, which take conditions and idempotency keys.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from producers.sql import translate as t
from producers.sql.engine import Engine, Result
from projector.fold.image import Image
from projector.replay.asof import replay_as_of
from projector.replay.point import parse_point
from server.catalogs import Catalogs
from server.errors import NotAQuery
from server.problems import COMMON, documented
from server.reads import RESOURCE_VERSION, image_at

SQL_MAX_CHARS = 100_000


class SqlRequest(BaseModel):
    """Statements to run, `;`-separated, and the database of unqualified names."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(min_length=1, max_length=SQL_MAX_CHARS)
    schema_name: str = Field(default="public", min_length=1, max_length=64)


class StatementResult(BaseModel):
    """What one reading statement returned."""

    statement: str
    columns: list[str]
    rows: list[list[Any]]


class SqlResponse(BaseModel):
    """The results, and the resource_version of the image they read."""

    resource_version: int
    results: list[StatementResult]


def run_reads(statements: list[t.Statement], image: Image, bootstrap: str,
              catalogs: Catalogs) -> list[StatementResult]:  # fmt: skip
    """Run reading statements over `image` (an `AS OF` query over the replayed catalog)."""
    engine = Engine(image)
    out: list[StatementResult] = []
    for statement in statements:
        action = statement.action  # type: ignore[union-attr]
        result: Result | None
        if isinstance(action, t.Use):
            continue
        if isinstance(action, t.Query) and action.as_of is not None:
            past = replay_as_of(bootstrap, catalogs.settings.topics, image.catalog,
                                parse_point(action.as_of),
                                security=catalogs.settings.read_security)  # fmt: skip
            result = Engine(past).query(action.sql, action.params)
        elif isinstance(action, t.Query):
            result = engine.query(action.sql, action.params)
        elif isinstance(action, t.ShowCreateTable):
            result = engine.show_create_table(action.schema, action.table)
        else:
            result = engine.show_attributes(action.schema, action.table, action.partition)
        out.append(StatementResult(statement=statement.sql, columns=list(result.columns),
                                   rows=jsonable_encoder([list(r) for r in result.rows])))
    return out


def router(catalogs: Catalogs) -> APIRouter:
    """The SQL route."""
    routes = APIRouter(prefix="/v1/catalogs/{catalog}", tags=["sql"])

    @routes.post("/sql", response_model=SqlResponse,
                 responses=documented(*COMMON, 410, 504))  # fmt: skip
    async def sql(catalog: str, body: SqlRequest,
                  resource_version: Annotated[str | None, RESOURCE_VERSION] = None,
                  ) -> SqlResponse:  # fmt: skip
        """Run SELECT / SHOW statements (TiDB's dialect, docs/sql.md) over the catalog."""
        catalogs.check(catalog)
        statements = t.translate(body.sql, t.Settings(catalog=catalog, schema=body.schema_name))
        writes = [s for s in statements if isinstance(s, t.Write)]
        if writes:
            raise NotAQuery(
                f"line {writes[0].line}: `{writes[0].sql}` writes: this route runs SELECT and "
                f"SHOW only; send writes to POST /v1/catalogs/{catalog}/commands/{{kind}}"
            )
        image = await image_at(catalogs, catalog, resource_version)
        results = await run_in_threadpool(run_reads, statements, image,
                                          catalogs.settings.bootstrap, catalogs)  # fmt: skip
        return SqlResponse(resource_version=image.resource_version, results=results)

    return routes
