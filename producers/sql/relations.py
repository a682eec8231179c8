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
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from events.keys import DATANODE_TABLE, TABLE_INFO, TABLE_NAME, TABLE_ROUTE, removed
from events.labels import region_label_rows
from events.values import DatanodeTableValue, KeyValue, TableInfoValue, TableRouteValue
from projector.fold.packing import unpack
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

SCHEMAS: dict[str, pa.Schema] = {
    "table_info": _TABLE,
    "table_name": pa.schema([("schema_name", pa.string()), ("table_name", pa.string()),
                             ("table_id", pa.int64())]),
    "table_route": pa.schema([("table_id", pa.int64()), ("region_id", pa.int64()),
                              ("leader_datanode", pa.int64()),
                              ("follower_datanodes", pa.list_(pa.int64()))]),
    "datanode_table": pa.schema([("datanode_id", pa.int64()), ("table_id", pa.int64()),
                                 ("regions", pa.list_(pa.int64())), ("version", pa.int64())]),
    "label_rule": pa.schema([("rule_id", pa.string()), ("rule_type", pa.string()),
                             ("labels", pa.list_(_LABEL)), ("ranges", pa.list_(_RANGE))]),
    "dropped_tables": _TABLE,
    **{name: pa.schema([(c, pa.string()) for c in columns])
       for name, columns in _TIDB_RULES.items()},
}  # fmt: skip
"""Each relation's columns, whichever `Source` builds it."""


def options_text(options: Mapping[str, str]) -> str:
    """A table's options as the `options` column shows them: sorted JSON."""
    return json.dumps(dict(options), sort_keys=True)


def relations(view: View) -> dict[str, pa.Table]:
    """Every relation of the module docstring, built from `view`."""
    return {name: relation(view, name) for name in RELATIONS}


def relation(view: View, name: str) -> pa.Table:
    """One relation of the module docstring (`RELATIONS`), built from `view`.

    Raises:
        KeyError: `name` is not one of `RELATIONS`.
    """
    if name in _TIDB_RULES:
        rows = region_label_rows(view.label_rules())
        return pa.table([[r.rule_id for r in rows], [r.rule_type for r in rows],
                         [r.region_label for r in rows], [r.ranges for r in rows]],
                        schema=SCHEMAS[name])  # fmt: skip
    return _BUILDERS[name](view)


def _scan(view: View, prefix: str) -> Iterator[tuple[str, KeyValue]]:
    """The keys of one kind and their values: a snapshot's values are built a row
    group at a time, and only the groups of that kind (not one lookup per key)."""
    for key, packed in view.values.scan(prefix + "/"):
        yield key, unpack(packed)


def _infos(view: View, prefix: str) -> Iterator[TableInfoValue]:
    for _, value in _scan(view, prefix):
        if isinstance(value, TableInfoValue):
            yield value


def _table_rows(infos: Iterator[TableInfoValue]) -> pa.Table:
    """Table infos as `_TABLE` rows, built column by column (a million tables' nested
    columns as flat lists and offsets; no per-row dicts)."""
    ids: list[int] = []
    schemas: list[str] = []
    names: list[str] = []
    versions: list[int] = []
    options: list[str] = []
    column_at: list[int] = [0]
    column_fields: tuple[list[Any], ...] = tuple([] for _ in _COLUMN)  # one list per field
    key_at: list[int] = [0]
    keys: list[str] = []
    part_at: list[int] = [0]
    part_ids: list[int] = []
    part_names: list[str] = []
    shared: dict[int, tuple[str, str, bool, str | None]] = {}  # column definitions are shared
    for info in infos:
        ids.append(info.table_id)
        schemas.append(info.schema_name)
        names.append(info.table_name)
        versions.append(info.version)
        options.append(options_text(info.options))
        for column in info.columns:
            row = shared.get(id(column))
            if row is None:
                row = shared[id(column)] = (column.name, column.data_type, column.nullable,
                                            column.default_value)  # fmt: skip
            for field_values, value in zip(column_fields, row, strict=True):
                field_values.append(value)
        column_at.append(len(column_fields[0]))
        keys.extend(info.primary_key)
        key_at.append(len(keys))
        for part in info.partitions:
            part_ids.append(part.partition_id)
            part_names.append(part.name)
        part_at.append(len(part_ids))
    columns = pa.StructArray.from_arrays(
        [pa.array(values, f.type) for values, f in zip(column_fields, _COLUMN, strict=True)],
        fields=list(_COLUMN))  # fmt: skip
    partitions = pa.StructArray.from_arrays(
        [pa.array(part_ids, pa.int64()), pa.array(part_names, pa.string())],
        fields=list(_PARTITION))  # fmt: skip
    return pa.Table.from_arrays([
        pa.array(ids, pa.int64()), pa.array(schemas, pa.string()), pa.array(names, pa.string()),
        pa.array(versions, pa.int64()),
        pa.ListArray.from_arrays(pa.array(column_at, pa.int32()), columns),
        pa.ListArray.from_arrays(pa.array(key_at, pa.int32()), pa.array(keys, pa.string())),
        pa.array(options, pa.string()),
        pa.ListArray.from_arrays(pa.array(part_at, pa.int32()), partitions),
    ], schema=_TABLE)  # fmt: skip


def _table_info(view: View) -> pa.Table:
    return _table_rows(_infos(view, TABLE_INFO))


def _dropped(view: View) -> pa.Table:
    return _table_rows(_infos(view, removed(TABLE_INFO)))


def _table_name(view: View) -> pa.Table:
    schemas, tables, ids = [], [], []
    for key, value in _scan(view, TABLE_NAME):
        _, _, schema, table = key.split("/", 3)
        schemas.append(schema)
        tables.append(table)
        ids.append(getattr(value, "table_id", None))
    return pa.table([schemas, tables, ids], schema=SCHEMAS["table_name"])


def _table_route(view: View) -> pa.Table:
    rows = []
    for key, route in _scan(view, TABLE_ROUTE):
        table_id = int(key.rsplit("/", 1)[1])
        for region in route.region_routes if isinstance(route, TableRouteValue) else ():
            rows.append({"table_id": table_id, "region_id": region.region_id,
                         "leader_datanode": region.leader_datanode,
                         "follower_datanodes": list(region.follower_datanodes)})  # fmt: skip
    return pa.Table.from_pylist(rows, schema=SCHEMAS["table_route"])


def _datanode_table(view: View) -> pa.Table:
    rows = []
    for _, value in _scan(view, DATANODE_TABLE):
        if isinstance(value, DatanodeTableValue):
            rows.append({"datanode_id": value.datanode_id, "table_id": value.table_id,
                         "regions": list(value.regions), "version": value.version})  # fmt: skip
    return pa.Table.from_pylist(rows, schema=SCHEMAS["datanode_table"])


def _label_rule(view: View) -> pa.Table:
    rows = [
        {"rule_id": r.rule_id, "rule_type": r.rule_type,
         "labels": [x.model_dump() for x in r.labels], "ranges": [x.model_dump() for x in r.ranges]}
        for r in view.label_rules()
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=SCHEMAS["label_rule"])


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
