"""A snapshot's typed columnar layout: an image as Arrow record batches, and back.

One row per key, one typed column per value field (`SCHEMA`); a row's `kind`
says which columns it uses, the others are null. Every record batch (and
Parquet row group) holds one `(section, kind)`. Column definitions are stored
once, as `kind = column` rows written first, and table infos hold their
indexes (`columns: list<int32>`), as `projector.packing` shares them in
memory. Pending changes stay Avro-encoded events (they are few).

Loading reads one row group at a time, checks its structure once (one kind,
no nulls where the kind needs a value, column indexes in range) and builds
the packed values straight from the columns: no JSON, no per-value pydantic
validation. The file's checksum (`projector.snapshot`) vouches for the bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from immutables import Map

from events.codec import decode_event, encode_event
from events.values import Column, KeyRange, Label, LabelRuleValue, PartitionDef, TableInfoValue
from projector.errors import SnapshotError
from projector.image import Image, PendingChange
from projector.packing import (
    Packed,
    PackedDatanodeTable,
    PackedName,
    PackedRoute,
    built,
    packed_infos,
    shared_column,
)
from projector.view import View

FORMAT = 2
"""Bumped whenever the layout changes; other formats are refused, never misread."""

HEAD, PUBLISHED, PENDING, DEFINITIONS = range(4)
"""Sections: the head view, the published view (only when it differs), pending, columns."""
COLUMN, INFO, NAME, ROUTE, DATANODE_TABLE, RULE, CHANGE = range(7)
"""Kinds of rows."""

CHUNK = 65_536
"""Rows per record batch (and Parquet row group)."""

_str = pa.string()
_PAIR = pa.struct([("key", _str), ("value", _str)])
SCHEMA = pa.schema(
    [
        ("section", pa.int8()),
        ("kind", pa.int8()),
        ("key", _str),
        ("table_id", pa.int64()),
        ("version", pa.int64()),
        ("catalog", pa.dictionary(pa.int32(), _str)),
        ("schema_name", pa.dictionary(pa.int32(), _str)),
        ("table_name", _str),
        ("columns", pa.list_(pa.int32())),
        ("primary_key", pa.list_(_str)),
        ("options", pa.map_(_str, _str)),
        ("partitions", pa.list_(pa.struct([("partition_id", pa.int64()), ("name", _str)]))),
        ("column_name", _str),
        ("data_type", _str),
        ("nullable", pa.bool_()),
        ("default_value", _str),
        (
            "routes",
            pa.list_(
                pa.struct(
                    [
                        ("region_id", pa.int64()),
                        ("leader_datanode", pa.int64()),
                        ("follower_datanodes", pa.list_(pa.int64())),
                    ]
                )
            ),
        ),
        ("datanode_id", pa.int64()),
        ("regions", pa.list_(pa.int64())),
        ("rule_id", _str),
        ("rule_type", _str),
        ("labels", pa.list_(_PAIR)),
        ("ranges", pa.list_(pa.struct([("start_key", _str), ("end_key", _str)]))),
        ("event", pa.binary()),
        ("epoch", pa.int64()),
    ]
)

_NEEDS: dict[int, tuple[str, ...]] = {
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
    CHANGE: ("key", "event", "epoch"),
}
"""The columns each kind reads; they must hold no nulls."""
_OPTIONAL: dict[int, tuple[str, ...]] = {COLUMN: ("default_value",)}


# -- writing -------------------------------------------------------------------


def image_batches(image: Image) -> Iterator[pa.RecordBatch]:
    """The image's rows, column definitions first, in record batches of one kind each."""
    views = [(HEAD, image.head)]
    if image.published is not image.head:
        views.append((PUBLISHED, image.published))
    grouped = [(section, _by_kind(view)) for section, view in views]
    definitions: dict[tuple[str, str, bool, str | None], int] = {}
    by_id: dict[int, int] = {}
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
    for (section, kinds), (_, info_columns) in zip(grouped, info_rows, strict=True):
        yield from _batches(section, INFO, info_columns)
        yield from _batches(section, NAME, _name_columns(kinds[NAME]))
        yield from _batches(section, ROUTE, _route_columns(kinds[ROUTE]))
        yield from _batches(section, DATANODE_TABLE, _datanode_columns(kinds[DATANODE_TABLE]))
        yield from _batches(section, RULE, _rule_columns(kinds[RULE]))
    changes = sorted(image.pending.items())
    yield from _batches(
        PENDING,
        CHANGE,
        {
            "key": [str(rv) for rv, _ in changes],
            "event": [encode_event(change.event) for _, change in changes],
            "epoch": [change.epoch for _, change in changes],
        },
    )


Rows = list[tuple[str, Any]]


def _by_kind(view: View) -> dict[int, Rows]:
    kinds: dict[int, Rows] = {INFO: [], NAME: [], ROUTE: [], DATANODE_TABLE: [], RULE: []}
    kind_of = {
        TableInfoValue: INFO,
        PackedName: NAME,
        PackedRoute: ROUTE,
        PackedDatanodeTable: DATANODE_TABLE,
        LabelRuleValue: RULE,
    }
    for key, packed in view.values.items():
        kinds[kind_of[type(packed)]].append((key, packed))
    return kinds


def _info_columns(
    rows: Rows, definitions: dict[tuple[str, str, bool, str | None], int], by_id: dict[int, int]
) -> dict[str, list[Any]]:
    columns: list[list[int]] = []
    for _, info in rows:
        indexes = []
        for column in info.columns:
            index = by_id.get(id(column))
            if index is None:
                spec = (column.name, column.data_type, column.nullable, column.default_value)
                index = by_id[id(column)] = definitions.setdefault(spec, len(definitions))
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


def _name_columns(rows: Rows) -> dict[str, list[Any]]:
    return {"key": [k for k, _ in rows], "table_id": [v.table_id for _, v in rows]}


def _route_columns(rows: Rows) -> dict[str, list[Any]]:
    return {
        "key": [k for k, _ in rows],
        "table_id": [v.table_id for _, v in rows],
        "routes": [list(v.routes) for _, v in rows],
    }


def _datanode_columns(rows: Rows) -> dict[str, list[Any]]:
    values = [v for _, v in rows]
    return {
        "key": [k for k, _ in rows],
        "table_id": [v.table_id for v in values],
        "version": [v.version for v in values],
        "datanode_id": [v.datanode_id for v in values],
        "regions": [v.regions for v in values],
    }


def _rule_columns(rows: Rows) -> dict[str, list[Any]]:
    values = [v for _, v in rows]
    return {
        "key": [k for k, _ in rows],
        "rule_id": [v.rule_id for v in values],
        "rule_type": [v.rule_type for v in values],
        "labels": [[(x.key, x.value) for x in v.labels] for v in values],
        "ranges": [[(r.start_key, r.end_key) for r in v.ranges] for v in values],
    }


def _batches(section: int, kind: int, columns: dict[str, list[Any]]) -> Iterator[pa.RecordBatch]:
    rows = len(next(iter(columns.values())))
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        arrays = []
        for field in SCHEMA:
            if field.name == "section":
                arrays.append(pa.array([section] * n, pa.int8()))
            elif field.name == "kind":
                arrays.append(pa.array([kind] * n, pa.int8()))
            elif field.name in columns:
                arrays.append(pa.array(columns[field.name][start : start + n], field.type))
            else:
                arrays.append(pa.nulls(n, field.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


# -- reading -------------------------------------------------------------------


def load_views(
    parquet: pq.ParquetFile, catalog: str, published_is_head: bool
) -> tuple[View, View, dict[int, PendingChange]]:
    """The head and published views and the pending changes, row group by row group.

    Raises:
        SnapshotError: A row group does not have the layout's structure.
    """
    definitions: list[Column] = []
    values = {HEAD: Map[str, Packed]().mutate(), PUBLISHED: Map[str, Packed]().mutate()}
    pending: dict[int, PendingChange] = {}
    index_keys: dict[int, list[str]] = {HEAD: [], PUBLISHED: []}
    for group in range(parquet.num_row_groups):
        section, kind = _group_kind(parquet, group)
        table = parquet.read_row_group(group, columns=[*_NEEDS[kind], *_OPTIONAL.get(kind, ())])
        columns = {name: _array(table, name, name in _NEEDS[kind]) for name in table.column_names}
        if kind == COLUMN:
            definitions.extend(_definitions(columns))
        elif kind == CHANGE:
            for rv, data, epoch in zip(
                *(columns[c].to_pylist() for c in _NEEDS[CHANGE]), strict=True
            ):
                pending[int(rv)] = PendingChange(decode_event(data), epoch)
        else:
            keys: list[str] = columns["key"].to_pylist()
            values[section].update(zip(keys, _READERS[kind](columns, definitions), strict=True))
            if kind in (DATANODE_TABLE, RULE):
                index_keys[section].extend(keys)
    head = View.from_values(catalog, values[HEAD].finish(), index_keys[HEAD])
    published = (
        head
        if published_is_head
        else View.from_values(catalog, values[PUBLISHED].finish(), index_keys[PUBLISHED])
    )
    return head, published, pending


def _group_kind(parquet: pq.ParquetFile, group: int) -> tuple[int, int]:
    """The row group's one (section, kind), from the column statistics the writer stores."""
    meta = parquet.metadata.row_group(group)
    marks = []
    for index in (0, 1):  # `section`, `kind`: the schema's first two columns
        stats = meta.column(index).statistics
        if stats is None or not stats.has_min_max or stats.min != stats.max:
            raise SnapshotError(f"row group {group} does not hold one (section, kind)")
        marks.append(int(stats.min))
    section, kind = marks
    sections = {COLUMN: (DEFINITIONS,), CHANGE: (PENDING,)}.get(kind, (HEAD, PUBLISHED))
    if kind not in _NEEDS or section not in sections:
        raise SnapshotError(f"row group {group}: kind {kind} in section {section}")
    return section, kind


def _array(table: pa.Table, name: str, required: bool) -> pa.Array:
    array = table.column(name).combine_chunks()
    if required and array.null_count:
        raise SnapshotError(f"column `{name}` has {array.null_count} null(s) where values belong")
    return array


def _ints(array: pa.Array) -> list[int]:
    return array.to_pylist()


def _strings(array: pa.Array) -> list[str]:
    if isinstance(array, pa.DictionaryArray):
        words = array.dictionary.to_pylist()  # shared: one string per distinct value
        return [words[i] for i in _ints(array.indices)]
    return array.to_pylist()


def _lists(array: pa.ListArray | pa.MapArray) -> tuple[list[int], pa.Array]:
    """A list column's offsets and the flat values they index."""
    return _ints(array.offsets), array.values


def _definitions(columns: dict[str, pa.Array]) -> list[Column]:
    fields = zip(
        *(
            columns[n].to_pylist()
            for n in ("column_name", "data_type", "nullable", "default_value")
        ),
        strict=True,
    )
    return [
        shared_column(Column(name=n, data_type=t, nullable=null, default_value=d))
        for n, t, null, d in fields
    ]


def _infos(columns: dict[str, pa.Array], definitions: Sequence[Column]) -> Sequence[Packed]:
    offsets, flat = _lists(columns["columns"])
    indexes = _ints(flat)
    if indexes and not 0 <= min(indexes) <= max(indexes) < len(definitions):
        raise SnapshotError(f"a column index is outside the {len(definitions)} definitions")
    shared = list(map(definitions.__getitem__, indexes))
    column_tuples = [tuple(shared[a:b]) for a, b in pairwise(offsets)]
    keys_at, pk_flat = _lists(columns["primary_key"])
    pk_names = pk_flat.to_pylist()
    keys: dict[tuple[str, ...], tuple[str, ...]] = {}
    primary_keys = [
        keys.setdefault(pk, pk) for pk in (tuple(pk_names[a:b]) for a, b in pairwise(keys_at))
    ]
    options = columns["options"]
    option_at = _ints(options.offsets)
    names, items = options.keys.to_pylist(), options.items.to_pylist()
    option_dicts = [
        dict(zip(names[a:b], items[a:b], strict=True)) if a != b else {}
        for a, b in pairwise(option_at)
    ]
    partitions = [
        tuple(built(PartitionDef, p) for p in parts) if parts else ()
        for parts in columns["partitions"].to_pylist()
    ]
    return packed_infos(
        {
            "type": "TableInfoValue", "table_id": table_id, "catalog": catalog,
            "schema_name": schema, "table_name": name, "columns": column_tuple,
            "primary_key": primary_key, "options": option, "partitions": partition,
            "version": version,
        }
        for table_id, catalog, schema, name, column_tuple, primary_key, option, partition, version
        in zip(
            _ints(columns["table_id"]), _strings(columns["catalog"]),
            _strings(columns["schema_name"]), _strings(columns["table_name"]), column_tuples,
            primary_keys, option_dicts, partitions, _ints(columns["version"]), strict=True,
        )
    )  # fmt: skip


def _names(columns: dict[str, pa.Array], _: Sequence[Column]) -> Sequence[Packed]:
    return list(map(PackedName, _ints(columns["table_id"])))


def _routes(columns: dict[str, pa.Array], _: Sequence[Column]) -> Sequence[Packed]:
    offsets, regions = _lists(columns["routes"])
    ids = _ints(regions.field("region_id"))
    leaders = _ints(regions.field("leader_datanode"))
    follower_at, follower_flat = _lists(regions.field("follower_datanodes"))
    followers = _ints(follower_flat)
    routes = [
        (region, leader, tuple(followers[a:b]) if a != b else ())
        for region, leader, (a, b) in zip(ids, leaders, pairwise(follower_at), strict=True)
    ]
    return [
        PackedRoute(table_id, tuple(routes[a:b]))
        for table_id, (a, b) in zip(_ints(columns["table_id"]), pairwise(offsets), strict=True)
    ]


def _datanode_tables(columns: dict[str, pa.Array], _: Sequence[Column]) -> Sequence[Packed]:
    offsets, flat = _lists(columns["regions"])
    regions = _ints(flat)
    return [
        PackedDatanodeTable(datanode, table_id, tuple(regions[a:b]), version)
        for datanode, table_id, version, (a, b) in zip(
            _ints(columns["datanode_id"]), _ints(columns["table_id"]), _ints(columns["version"]),
            pairwise(offsets), strict=True,
        )
    ]  # fmt: skip


def _rules(columns: dict[str, pa.Array], _: Sequence[Column]) -> Sequence[Packed]:
    fields = zip(
        *(columns[n].to_pylist() for n in ("rule_id", "rule_type", "labels", "ranges")), strict=True
    )
    return [
        built(
            LabelRuleValue,
            {
                "type": "LabelRuleValue",
                "rule_id": rule,
                "rule_type": rule_type,
                "labels": tuple(built(Label, label) for label in labels),
                "ranges": tuple(built(KeyRange, key_range) for key_range in ranges),
            },
        )
        for rule, rule_type, labels, ranges in fields
    ]


_READERS = {
    INFO: _infos,
    NAME: _names,
    ROUTE: _routes,
    DATANODE_TABLE: _datanode_tables,
    RULE: _rules,
}
