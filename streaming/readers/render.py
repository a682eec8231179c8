"""`changes` rows rendered into one per-kind table's rows, in Python (no JVM).

`streaming.spark.changes.Renderer` does the same in Spark; both give the rows
`streaming.spark.tables.VALUE_COLUMNS` declares. `kind_rows` turns one released
change into the rows one table shows: its mutations of keys that table
takes, each with the table's columns by name plus `op` and `pos` (the
mutation's place in its change). A DELETE has only its key columns.

`region_label` is derived from the `label_rule` mutation by
`events.labels.region_label_rows`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from events.keys import (
    DATANODE_TABLE,
    LABEL_RULE,
    REMOVED,
    TABLE_INFO,
    TABLE_NAME,
    TABLE_ROUTE,
)
from events.labels import region_label_rows
from events.values import LabelRuleValue
from streaming.layout import KINDS

Value = dict[str, Any]
Row = dict[str, Any]

PREFIXES: dict[str, str] = {"table_info": TABLE_INFO, "table_name": TABLE_NAME,
                            "table_route": TABLE_ROUTE, "datanode_table": DATANODE_TABLE,
                            "label_rule": LABEL_RULE}
"""Kind → the first part of the keys it takes (`dropped_tables` takes the `REMOVED` keys)."""


def kind_of(key: str) -> str | None:
    """The `changes` kind of a key (the per-kind table that takes it; `label_rule` also
    feeds `region_label`), None for a key no table shows."""
    if key.startswith(REMOVED):
        return "dropped_tables"
    prefix = key.split("/", 1)[0]
    return next((kind for kind, first in PREFIXES.items() if first == prefix), None)


def shows(kind: str, key: str) -> bool:
    """Whether the per-kind table of `kind` (a `changes` kind) takes `key`."""
    if key.startswith(REMOVED):
        return kind == "dropped_tables"
    return kind in PREFIXES and key.split("/", 1)[0] == PREFIXES[kind]


def _info(value: Value) -> Value:
    return {k: v for k, v in value.items() if k != "type"}


def _table_info(_key: str, value: Value) -> Value:
    return {**_info(value), "info_catalog": value["catalog"]}  # `catalog` is the row's


def _table_name(key: str, value: Value) -> Value:
    parts = key.split("/")
    return {"schema_name": parts[2], "table_name": parts[3], "table_id": value["table_id"]}


def _region_label(_key: str, value: Value) -> Value:
    (row,) = region_label_rows([LabelRuleValue.model_validate(value)])
    return dataclasses.asdict(row)


def _dropped_tables(key: str, value: Value) -> Value:
    body = key[len(REMOVED):].split("/", 1)[0]
    kind = value.get("type")
    info = _info(value) if kind == "TableInfoValue" else None
    route = _info(value) if kind == "TableRouteValue" else None
    table_id = value["table_id"] if info or route else int(key.split("/")[1])
    return {"kind": "table_info" if body == TABLE_INFO else "table_route",
            "table_id": table_id, "table_info": info, "table_route": route}


_RENDER: dict[str, Callable[[str, Value], Value]] = {
    "table_info": _table_info,
    "table_name": _table_name,
    "table_route": lambda _key, value: _info(value),
    "datanode_table": lambda _key, value: _info(value),
    "label_rule": lambda _key, value: _info(value),
    "region_label": _region_label,
    "dropped_tables": _dropped_tables,
}
"""Per-kind table → its value columns from a PUT's key and Avro value (extra fields are
left out by the table's schema)."""


def kind_rows(table: str, catalog: str, resource_version: int, schema_epoch: int,
              mutations: list[dict[str, Any]]) -> list[Row]:
    """The rows of one per-kind table a released change writes, in its mutations' order.

    Args:
        table: A per-kind table built from mutations (not `catalog_state`).
        catalog: The change's catalog.
        resource_version: Its place in the catalog's log.
        schema_epoch: The epoch it is published at.
        mutations: The event's mutations (`decode_event_dict` of the record `changes`
            keeps).
    """
    kind, render = KINDS[table], _RENDER[table]
    rows = []
    for pos, mutation in enumerate(mutations):
        key, value = mutation["key"], mutation["value"]
        if not shows(kind, key):
            continue
        row = render(key, value) if mutation["op"] == "PUT" and value is not None else {}
        row.update(catalog=catalog, key=key, op=mutation["op"], pos=pos,
                   schema_epoch=schema_epoch, resource_version=resource_version)
        rows.append(row)
    return rows
