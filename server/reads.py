"""Reads: a catalog's state from the server's follower of it (the published view).

Every read answers from one image and says which: `resource_version` in the body
and `ETag: "N"` (what `If-Match` sends back). `?resourceVersion=N` waits, up to
the server's wait timeout, until the follower has reached N (read-your-writes
across processes: send the `resource_version` a write returned); past it, a
504 `WaitTimeout` problem.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from events.keys import LABEL_RULE, TABLE_INFO, TABLE_NAME, TABLE_ROUTE
from events.labels import region_label_rows
from events.values import LabelRuleValue, TableInfoValue, TableRouteValue
from projector.errors import FollowerStopped
from projector.fold.image import Image
from projector.fold.packing import unpack
from projector.fold.view import View
from server.catalogs import Catalogs
from server.errors import InvalidResourceVersion, NotFound
from server.problems import COMMON, documented

RESOURCE_VERSION = Query(
    alias="resourceVersion",
    description="wait until the server's follower reached this resource_version (bounded)",
)
"""The `?resourceVersion=N` parameter (text: a bad one is a 400 problem, not a 422)."""

RV = Annotated[str | None, RESOURCE_VERSION]
"""A route's optional `?resourceVersion=N`."""

WATCH = Annotated[bool, Query(description=(
    "stream the collection's changes after `resourceVersion` (none: from now) as NDJSON "
    "watch events instead of listing it: the stream of `/watch?keyPrefix=` the collection's "
    "key prefix"))]  # fmt: skip
"""A collection's `?watch=true` (Kubernetes' list-then-watch on one route)."""

Opener = Callable[[str, str | None, str | None], Awaitable[Response]]
"""Opens a watch stream: (catalog, resourceVersion, keyPrefix) → the response (`Hub.open`)."""

NDJSON = "application/x-ndjson"


def parse_resource_version(text: str | None) -> int | None:
    """`?resourceVersion=` as a number (None when absent).

    Raises:
        InvalidResourceVersion: It is not a whole number of 0 or more within an Avro long.
    """
    if text is None:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise InvalidResourceVersion(text)
    return int(text)


async def image_at(catalogs: Catalogs, catalog: str, resource_version: str | None) -> Image:
    """The follower's image of `catalog`, at or past `resource_version` when given.

    Raises:
        CatalogNotServed, InvalidResourceVersion, WaitTimeout, FollowerStopped.
    """
    wanted = parse_resource_version(resource_version)
    follower = await run_in_threadpool(catalogs.follower, catalog)
    if follower.failure is not None:
        raise FollowerStopped(f"the follower of `{catalog}` stopped: {follower.failure}")
    if wanted is None:
        return follower.current(catalog)
    timeout = catalogs.settings.wait_timeout
    return await run_in_threadpool(follower.wait_for, wanted, timeout, catalog)


class CatalogState(BaseModel):
    """A catalog's position: its resource_version, stable epoch and publish mode."""

    catalog: str
    resource_version: int
    stable_epoch: int
    publish_mode: str
    leader_epoch: int


class Listing(BaseModel):
    """Items of one image, with the image's resource_version."""

    resource_version: int
    items: list[dict[str, Any]]


class TableDetail(BaseModel):
    """A table's definition and its route."""

    resource_version: int
    table: TableInfoValue
    route: TableRouteValue | None


def _scan(view: View, prefix: str) -> Iterator[tuple[str, Any]]:
    for key, packed in view.values.scan(prefix + "/"):
        yield key, unpack(packed)


def _listing(image: Image, items: list[dict[str, Any]]) -> JSONResponse:
    return JSONResponse({"resource_version": image.resource_version, "items": items},
                        headers={"ETag": f'"{image.resource_version}"'})  # fmt: skip


def router(catalogs: Catalogs, open_watch: Opener) -> APIRouter:
    """The read routes of the served catalogs.

    Args:
        catalogs: The served catalogs.
        open_watch: Opens the stream of a collection's `?watch=true` (`server.watch.Hub.open`).
    """
    routes = APIRouter(prefix="/v1/catalogs/{catalog}", tags=["reads"])
    problems = documented(*COMMON, 410, 504)
    listed: dict[int | str, dict[str, Any]] = {
        200: {"description": "the listing, or with `watch=true` an NDJSON stream of watch "
                             "events (docs/http.md, Watch)",
              "content": {NDJSON: {"schema": {"type": "string"}}}},
        **problems,
    }  # fmt: skip

    @routes.get("", response_model=CatalogState, responses=problems)
    async def catalog_state(catalog: str, resource_version: RV = None) -> JSONResponse:
        """The catalog's resource_version, stable epoch, publish mode and leader epoch."""
        image = await image_at(catalogs, catalog, resource_version)
        state = CatalogState(catalog=catalog, resource_version=image.resource_version,
                             stable_epoch=image.stable_epoch, publish_mode=image.publish_mode,
                             leader_epoch=image.leader_epoch)  # fmt: skip
        return JSONResponse(state.model_dump(), headers={"ETag": f'"{image.resource_version}"'})

    @routes.get("/tables", response_model=Listing, responses=listed)
    async def tables(catalog: str, resource_version: RV = None,
                     watch: WATCH = False) -> Response:
        """The live tables (`__table_info/…`), by table id."""
        if watch:
            return await open_watch(catalog, resource_version, f"{TABLE_INFO}/")
        image = await image_at(catalogs, catalog, resource_version)
        items = [v.model_dump(mode="json") for _, v in _scan(image.published, TABLE_INFO)
                 if isinstance(v, TableInfoValue)]  # fmt: skip
        return _listing(image, items)

    @routes.get("/tables/{schema_name}/{table_name}", response_model=TableDetail,
                responses=problems)  # fmt: skip
    async def table(catalog: str, schema_name: str, table_name: str,
                    resource_version: RV = None) -> JSONResponse:  # fmt: skip
        """One live table by name, with its route."""
        image = await image_at(catalogs, catalog, resource_version)
        info = image.published.table_by_name(schema_name, table_name)
        if info is None:
            raise NotFound(f"no live table `{schema_name}.{table_name}` in catalog `{catalog}` "
                           f"at resource_version {image.resource_version}: list "
                           f"/v1/catalogs/{catalog}/names")  # fmt: skip
        route = image.published.route(info.table_id)
        body = {"resource_version": image.resource_version, "table": info.model_dump(mode="json"),
                "route": None if route is None else route.model_dump(mode="json")}  # fmt: skip
        return JSONResponse(body, headers={"ETag": f'"{image.resource_version}"'})

    @routes.get("/names", response_model=Listing, responses=listed)
    async def names(catalog: str, resource_version: RV = None,
                    watch: WATCH = False) -> Response:
        """Every table name (`__table_name/…`) and the id it points to."""
        if watch:
            return await open_watch(catalog, resource_version, f"{TABLE_NAME}/")
        image = await image_at(catalogs, catalog, resource_version)
        items = []
        for key, value in _scan(image.published, TABLE_NAME):
            _, _, schema_name, table_name = key.split("/", 3)
            items.append({"schema_name": schema_name, "table_name": table_name,
                          "table_id": value.table_id})  # fmt: skip
        return _listing(image, items)

    @routes.get("/routes", response_model=Listing, responses=listed)
    async def routes_(catalog: str, resource_version: RV = None,
                      watch: WATCH = False) -> Response:
        """Every table's region routes (`__table_route/…`)."""
        if watch:
            return await open_watch(catalog, resource_version, f"{TABLE_ROUTE}/")
        image = await image_at(catalogs, catalog, resource_version)
        items = [v.model_dump(mode="json") for _, v in _scan(image.published, TABLE_ROUTE)]
        return _listing(image, items)

    @routes.get("/label-rules", response_model=Listing, responses=listed)
    async def label_rules(catalog: str, resource_version: RV = None,
                          watch: WATCH = False) -> Response:
        """Every region label rule (`__label_rule/…`)."""
        if watch:
            return await open_watch(catalog, resource_version, f"{LABEL_RULE}/")
        image = await image_at(catalogs, catalog, resource_version)
        items = [r.model_dump(mode="json") for r in image.published.label_rules()
                 if isinstance(r, LabelRuleValue)]  # fmt: skip
        return _listing(image, items)

    @routes.get("/region-label", response_model=Listing, responses=problems)
    async def region_label(catalog: str, resource_version: RV = None) -> JSONResponse:
        """`INFORMATION_SCHEMA.REGION_LABEL`: rule id, type, labels and ranges (TiDB's rows)."""
        image = await image_at(catalogs, catalog, resource_version)
        rows = region_label_rows(image.published.label_rules())
        items = [{"rule_id": r.rule_id, "rule_type": r.rule_type,
                  "region_label": r.region_label, "ranges": r.ranges} for r in rows]  # fmt: skip
        return _listing(image, items)

    @routes.get("/keys", response_model=Listing, responses=listed)
    async def keys(catalog: str, resource_version: RV = None,
                   key_prefix: Annotated[str, Query(alias="keyPrefix", max_length=1024)] = "",
                   watch: WATCH = False) -> Response:  # fmt: skip
        """Every key with `keyPrefix` and its value (the whole key space without one)."""
        if watch:
            return await open_watch(catalog, resource_version, key_prefix or None)
        image = await image_at(catalogs, catalog, resource_version)
        items = [{"key": k, "value": v.model_dump(mode="json")}
                 for k, v in sorted(image.published.items()) if k.startswith(key_prefix)]
        return _listing(image, items)

    return routes
