"""A snapshot's typed columnar layout (format 4): the schema, and an image as Arrow record batches.

One row per key, one typed column per value field (`SCHEMA`); a row's `kind`
says which columns it uses, the others are null. Every record batch (and
Parquet row group) holds one `(section, kind)`. Column definitions are stored
once, as `kind = column` rows written first, and table infos hold their
indexes (`columns: list<int32>`), as `projector.fold.packing` shares them in
memory. Pending changes stay Avro-encoded events (they are few).

`projector.snapshot.load` reads it back. The file's checksum
(`projector.snapshot.store`) vouches for the bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from events.codec import encode_event
from events.values import Column, LabelRuleValue, TableInfoValue
from projector.fold.image import Image
from projector.fold.packing import (
    PackedDatanodeTable,
    PackedName,
    PackedRoute,
)
from projector.fold.view import View
from projector.snapshot.cold import ColdValues
from projector.snapshot.layout import (
    CHANGE,
    CHUNK,
    COLUMN,
    DATANODE_TABLE,
    DEFINITIONS,
    HEAD,
    INFO,
    NAME,
    PENDING,
    PUBLISHED,
    ROUTE,
    RULE,
    SCHEMA,
)

NEEDS: dict[int, tuple[str, ...]] = {
    COLUMN: ("column_name", "data_type", "nullable"),
    INFO: (
        "key",
        "table_id",
        "version",
        "catalog",
        "schema_name",
        "table_name",
        "columns",
        "primary_key",
        "options",
        "partitions",
    ),
    NAME: ("key", "table_id"),
    ROUTE: ("key", "table_id", "routes"),
    DATANODE_TABLE: ("key", "table_id", "version", "datanode_id", "regions"),
    RULE: ("key", "rule_id", "rule_type", "labels", "ranges"),
    CHANGE: ("key", "event", "schema_epoch"),
}
"""The columns each kind reads; they must hold no nulls."""
OPTIONAL: dict[int, tuple[str, ...]] = {COLUMN: ("default_value",)}


# -- writing -------------------------------------------------------------------


def image_batches(image: Image) -> Iterator[pa.RecordBatch]:
    """The image's rows, column definitions first, in record batches of one kind each.

    A view's cold rows (`projector.snapshot.cold`) untouched since the load go back
    out as the columns they were read as, not built one value at a time:
    their column definitions are numbered first, in the order their rows use.
    """
    views = [(HEAD, image.head)]
    if image.published is not image.head:
        views.append((PUBLISHED, image.published))
    definitions: dict[Spec, int] = {}
    by_id: dict[int, int] = {}
    seeded = _seed([view for _, view in views], definitions, by_id)
    passed = [(section, view, _passes(view, seeded)) for section, view in views]
    grouped = [(section, _by_kind(view, passes)) for section, view, passes in passed]
    info_rows = [
        (section, _info_columns(kinds[INFO], definitions, by_id)) for section, kinds in grouped
    ]
    yield from _batches(
        DEFINITIONS,
        COLUMN,
        {
            name: [spec[i] for spec in definitions]
            for i, name in enumerate(("column_name", "data_type", "nullable", "default_value"))
        },
    )
    for (section, kinds), (_, info_columns), (_, view, passes) in zip(
        grouped, info_rows, passed, strict=True
    ):
        yield from _batches(section, INFO, info_columns)
        yield from _batches(section, NAME, _name_columns(kinds[NAME]))
        yield from _batches(section, ROUTE, _route_columns(kinds[ROUTE]))
        yield from _batches(section, DATANODE_TABLE, _datanode_columns(kinds[DATANODE_TABLE]))
        yield from _batches(section, RULE, _rule_columns(kinds[RULE]))
        if passes:
            cold = _cold(view)
            assert cold is not None
            for kind, keys, columns in cold.untouched(view.values.changes):
                yield from _batches(section, kind, {"key": keys, **columns})
    changes = sorted(image.pending.items())
    yield from _batches(
        PENDING,
        CHANGE,
        {
            "key": [str(rv) for rv, _ in changes],
            "event": [encode_event(change.event) for _, change in changes],
            "schema_epoch": [change.schema_epoch for _, change in changes],
        },
    )


Rows = list[tuple[str, Any]]
Columns = dict[str, Any]
"""Column name → a list of values, or an Arrow array (a cold layer's rows)."""


Spec = tuple[str, str, bool, str | None]


def _spec(column: Column) -> Spec:
    return (column.name, column.data_type, column.nullable, column.default_value)


def _seed(
    views: list[View], definitions: dict[Spec, int], by_id: dict[int, int]
) -> Sequence[Column] | None:
    """Number a cold layer's column definitions first, as its rows number them.

    Returns:
        Those definitions, or None when there is no cold layer or its
        definitions repeat one (then its rows cannot keep their numbers).
    """
    cold = next((c for c in map(_cold, views) if c is not None), None)
    if cold is None:
        return None
    for column in cold.definitions:
        by_id[id(column)] = definitions.setdefault(_spec(column), len(definitions))
    return cold.definitions if len(definitions) == len(cold.definitions) else None


def _cold(view: View) -> ColdValues | None:
    """The view's cold layer: a snapshot's columns, as `projector.snapshot.load` builds it."""
    cold = view.values.cold
    return cold if isinstance(cold, ColdValues) else None


def _passes(view: View, seeded: Sequence[Column] | None) -> bool:
    """Whether the view's untouched cold rows go out as their columns (numbered as seeded)."""
    cold = _cold(view)
    return cold is not None and seeded is not None and cold.definitions is seeded


def _by_kind(view: View, passes: bool) -> dict[int, Rows]:
    kinds: dict[int, Rows] = {INFO: [], NAME: [], ROUTE: [], DATANODE_TABLE: [], RULE: []}
    kind_of = {
        TableInfoValue: INFO,
        PackedName: NAME,
        PackedRoute: ROUTE,
        PackedDatanodeTable: DATANODE_TABLE,
        LabelRuleValue: RULE,
    }
    values = view.values
    # When the cold rows go out as columns, only the changes are built into rows.
    for key, packed in values.changed_items() if passes else values.items():
        kinds[kind_of[type(packed)]].append((key, packed))
    return kinds


def _info_columns(rows: Rows, definitions: dict[Spec, int], by_id: dict[int, int]) -> Columns:
    columns: list[list[int]] = []
    for _, info in rows:
        indexes = []
        for column in info.columns:
            index = by_id.get(id(column))
            if index is None:
                index = definitions.setdefault(_spec(column), len(definitions))
                by_id[id(column)] = index
            indexes.append(index)
        columns.append(indexes)
    infos = [info for _, info in rows]
    return {
        "key": [key for key, _ in rows],
        "table_id": [i.table_id for i in infos],
        "version": [i.version for i in infos],
        "catalog": [i.catalog for i in infos],
        "schema_name": [i.schema_name for i in infos],
        "table_name": [i.table_name for i in infos],
        "columns": columns,
        "primary_key": [i.primary_key for i in infos],
        "options": [list(i.options.items()) for i in infos],
        "partitions": [[(p.partition_id, p.name) for p in i.partitions] for i in infos],
    }


def _name_columns(rows: Rows) -> Columns:
    return {"key": [k for k, _ in rows], "table_id": [v.table_id for _, v in rows]}


def _route_columns(rows: Rows) -> Columns:
    return {
        "key": [k for k, _ in rows],
        "table_id": [v.table_id for _, v in rows],
        "routes": [list(v.routes) for _, v in rows],
    }


def _datanode_columns(rows: Rows) -> Columns:
    values = [v for _, v in rows]
    return {
        "key": [k for k, _ in rows],
        "table_id": [v.table_id for v in values],
        "version": [v.version for v in values],
        "datanode_id": [v.datanode_id for v in values],
        "regions": [v.regions for v in values],
    }


def _rule_columns(rows: Rows) -> Columns:
    values = [v for _, v in rows]
    return {
        "key": [k for k, _ in rows],
        "rule_id": [v.rule_id for v in values],
        "rule_type": [v.rule_type for v in values],
        "labels": [[(x.key, x.value) for x in v.labels] for v in values],
        "ranges": [[(r.start_key, r.end_key) for r in v.ranges] for v in values],
    }


def _batches(section: int, kind: int, columns: Columns) -> Iterator[pa.RecordBatch]:
    """Record batches of up to `CHUNK` rows; a column is a list of values or an Arrow array."""
    rows = len(next(iter(columns.values())))
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        arrays = []
        for field in SCHEMA:
            values = columns.get(field.name)
            if field.name == "section":
                arrays.append(pa.array([section] * n, pa.int8()))
            elif field.name == "kind":
                arrays.append(pa.array([kind] * n, pa.int8()))
            elif isinstance(values, pa.Array):
                array = values.slice(start, n)
                arrays.append(array if array.type == field.type else array.cast(field.type))
            elif values is not None:
                arrays.append(pa.array(values[start : start + n], field.type))
            else:
                arrays.append(pa.nulls(n, field.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)
