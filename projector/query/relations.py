"""Arrow relations of a catalog's published view, one per kind of key, plus TiDB's views.

| relation         | one row per                          | from                           |
|------------------|--------------------------------------|--------------------------------|
| `table_info`     | live table                           | `__table_info/{id}`            |
| `table_name`     | table name                           | `__table_name/{c}/{s}/{t}`     |
| `table_route`    | region of a live table               | `__table_route/{id}`           |
| `datanode_table` | (datanode, table)                    | `__dn_table/{dn}/{id}`         |
| `label_rule`     | label rule                           | `__label_rule/{rule_id}`       |
| `dropped_tables` | dropped, not yet purged table        | `__removed-__table_info/{id}`  |
| `region_label`   | label rule, as TiDB's `INFORMATION_SCHEMA.REGION_LABEL` | the rules   |
| `attributes`     | label rule, as TiDB's `INFORMATION_SCHEMA.ATTRIBUTES`   | the rules   |
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pyarrow as pa

from events.keys import DATANODE_TABLE, TABLE_INFO, TABLE_NAME, removed
from events.labels import region_label_rows
from events.values import DatanodeTableValue, TableInfoValue
from projector.fold.view import View

_COLUMN = pa.struct([("name", pa.string()), ("data_type", pa.string()),
                     ("nullable", pa.bool_()), ("default_value", pa.string())])  # fmt: skip
_PARTITION = pa.struct([("partition_id", pa.int64()), ("name", pa.string())])
_LABEL = pa.struct([("key", pa.string()), ("value", pa.string())])
_RANGE = pa.struct([("start_key", pa.string()), ("end_key", pa.string())])

_TABLE = pa.schema([
    ("table_id", pa.int64()), ("schema_name", pa.string()), ("table_name", pa.string()),
    ("version", pa.int64()), ("columns", pa.list_(_COLUMN)), ("primary_key", pa.list_(pa.string())),
    ("options", pa.string()), ("partitions", pa.list_(_PARTITION)),
])  # fmt: skip
_TIDB_RULES = {
    "region_label": ("RULE_ID", "RULE_TYPE", "REGION_LABEL", "RANGES"),
    "attributes": ("ID", "TYPE", "ATTRIBUTES", "RANGES"),
}
"""TiDB's column names of the two views of the label rules (same rows, same format)."""


def relations(view: View) -> dict[str, pa.Table]:
    """Every relation of the module docstring, built from `view`."""
    return {name: relation(view, name) for name in RELATIONS}


def relation(view: View, name: str) -> pa.Table:
    """One relation of the module docstring (`RELATIONS`), built from `view`.

    Raises:
        KeyError: `name` is not one of `RELATIONS`.
    """
    if name in _TIDB_RULES:
        columns = _TIDB_RULES[name]
        rows = region_label_rows(view.label_rules())
        return pa.table({
            columns[0]: [r.rule_id for r in rows], columns[1]: [r.rule_type for r in rows],
            columns[2]: [r.region_label for r in rows], columns[3]: [r.ranges for r in rows],
        }, schema=pa.schema([(c, pa.string()) for c in columns]))  # fmt: skip
    return _BUILDERS[name](view)


def _keys(view: View, prefix: str) -> Iterator[str]:
    # Keys only: a value loaded from a snapshot is built when it is read.
    start = prefix + "/"
    return (key for key in view.values if key.startswith(start))


def _infos(view: View, prefix: str) -> Iterator[TableInfoValue]:
    for key in _keys(view, prefix):
        value = view.get(key)
        if isinstance(value, TableInfoValue):
            yield value


def _table_rows(infos: Iterator[TableInfoValue]) -> pa.Table:
    rows = [
        {
            "table_id": i.table_id, "schema_name": i.schema_name, "table_name": i.table_name,
            "version": i.version, "columns": [c.model_dump() for c in i.columns],
            "primary_key": list(i.primary_key), "options": json.dumps(i.options, sort_keys=True),
            "partitions": [p.model_dump() for p in i.partitions],
        }
        for i in infos
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=_TABLE)


def _table_info(view: View) -> pa.Table:
    return _table_rows(_infos(view, TABLE_INFO))


def _dropped(view: View) -> pa.Table:
    return _table_rows(_infos(view, removed(TABLE_INFO)))


def _table_name(view: View) -> pa.Table:
    schemas, tables, ids = [], [], []
    for key in _keys(view, TABLE_NAME):
        value = view.get(key)
        _, _, schema, table = key.split("/", 3)
        schemas.append(schema)
        tables.append(table)
        ids.append(getattr(value, "table_id", None))
    return pa.table({"schema_name": pa.array(schemas, pa.string()),
                     "table_name": pa.array(tables, pa.string()),
                     "table_id": pa.array(ids, pa.int64())})  # fmt: skip


def _table_route(view: View) -> pa.Table:
    rows = []
    for key in _keys(view, TABLE_INFO):
        table_id = int(key.rsplit("/", 1)[1])
        route = view.route(table_id)
        for region in route.region_routes if route is not None else ():
            rows.append({"table_id": table_id, "region_id": region.region_id,
                         "leader_datanode": region.leader_datanode,
                         "follower_datanodes": list(region.follower_datanodes)})  # fmt: skip
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("table_id", pa.int64()), ("region_id", pa.int64()), ("leader_datanode", pa.int64()),
        ("follower_datanodes", pa.list_(pa.int64())),
    ]))  # fmt: skip


def _datanode_table(view: View) -> pa.Table:
    rows = []
    for key in _keys(view, DATANODE_TABLE):
        value = view.get(key)
        if isinstance(value, DatanodeTableValue):
            rows.append({"datanode_id": value.datanode_id, "table_id": value.table_id,
                         "regions": list(value.regions), "version": value.version})  # fmt: skip
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("datanode_id", pa.int64()), ("table_id", pa.int64()), ("regions", pa.list_(pa.int64())),
        ("version", pa.int64()),
    ]))  # fmt: skip


def _label_rule(view: View) -> pa.Table:
    rows = [
        {"rule_id": r.rule_id, "rule_type": r.rule_type,
         "labels": [x.model_dump() for x in r.labels], "ranges": [x.model_dump() for x in r.ranges]}
        for r in view.label_rules()
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("rule_id", pa.string()), ("rule_type", pa.string()), ("labels", pa.list_(_LABEL)),
        ("ranges", pa.list_(_RANGE)),
    ]))  # fmt: skip


_BUILDERS: dict[str, Callable[[View], pa.Table]] = {
    "table_info": _table_info,
    "table_name": _table_name,
    "table_route": _table_route,
    "datanode_table": _datanode_table,
    "label_rule": _label_rule,
    "dropped_tables": _dropped,
}

RELATIONS: tuple[str, ...] = (*_BUILDERS, *_TIDB_RULES)
"""The relation names a query can use (INFORMATION_SCHEMA.X is read as `x`)."""
