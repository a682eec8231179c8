"""Loading a format-2 snapshot (`projector.snapshot_columns`) into views, row group by row group.

Each row group's structure is checked once (one `(section, kind)` from the
column statistics, no nulls where the kind needs a value, column indexes in
range); then the packed values are built straight from the columns: no JSON,
no per-value pydantic validation.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import pyarrow as pa
import pyarrow.parquet as pq
from immutables import Map

from events.codec import decode_event
from events.values import Column, KeyRange, Label, LabelRuleValue, PartitionDef
from projector.errors import SnapshotError
from projector.image import PendingChange
from projector.packing import (
    Packed,
    PackedDatanodeTable,
    PackedName,
    PackedRoute,
    built,
    packed_infos,
    shared_column,
)
from projector.snapshot_columns import (
    CHANGE,
    COLUMN,
    DATANODE_TABLE,
    DEFINITIONS,
    HEAD,
    INFO,
    NAME,
    NEEDS,
    OPTIONAL,
    PENDING,
    PUBLISHED,
    ROUTE,
    RULE,
)
from projector.view import View


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
        table = parquet.read_row_group(group, columns=[*NEEDS[kind], *OPTIONAL.get(kind, ())])
        columns = {name: _array(table, name, name in NEEDS[kind]) for name in table.column_names}
        if kind == COLUMN:
            definitions.extend(_definitions(columns))
        elif kind == CHANGE:
            for rv, data, epoch in zip(
                *(columns[c].to_pylist() for c in NEEDS[CHANGE]), strict=True
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
    if kind not in NEEDS or section not in sections:
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
