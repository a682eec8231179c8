"""The cold layer of a view: a loaded snapshot's values, kept in their Arrow columns.

Building the packed value of every key at load costs ≈ 25 Python objects
per table (≈ 15 µs; 15 to 20 s for 1M tables, BENCHMARKS.md "Follower"). A
`ColdValues` keeps each row group's columns as Arrow arrays, its keys too,
under a `KeyIndex` (`projector.snapshot.index`: no Python string per key),
and builds a key's packed value when it is read: one row for a lookup
(`get`), a whole row group at a time for a scan (`items`). The same readers
build both, so a value read alone equals the one a scan gives.

It never changes once loaded: a view puts the changes since the snapshot in
a layer above it (`projector.fold.layered`).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

import pyarrow as pa
import pyarrow.compute as pc

from events.base import built
from events.keys import DATANODE_TABLE as _DATANODE_TABLE
from events.values import Column, KeyRange, Label, LabelRuleValue, PartitionDef
from projector.errors import SnapshotError
from projector.fold.packing import (
    Packed,
    PackedDatanodeTable,
    PackedName,
    PackedRoute,
    packed_infos,
)
from projector.snapshot.arrow import int_scalar, string_scalar
from projector.snapshot.index import KeyIndex
from projector.snapshot.layout import DATANODE_TABLE, INFO, NAME, ROUTE, RULE

_DATANODE_PREFIX = _DATANODE_TABLE + "/"

_RECENT = 1024
"""Values built by `get` kept for the next reads of the same keys (then dropped at once)."""

Columns = dict[str, pa.Array]
Reader = Callable[[Columns, Sequence[Column]], Sequence[Packed]]


@dataclass(frozen=True, slots=True)
class _Group:
    """One row group: its kind, its first row's number, its keys and value columns."""

    kind: int
    start: int
    keys: pa.Array
    columns: Columns
    indexed: pa.Array | None = None
    """Datanode-table groups: the rows with a `__dn_table/…` key (None: all)."""


class ColdValues:
    """An immutable map from key to packed value, built from the columns on each read.

    Args:
        definitions: The snapshot's column definitions (infos hold indexes into them).
    """

    __slots__ = ("_datanodes", "_groups", "_index", "_lock", "_recent", "_starts", "definitions")

    def __init__(self, definitions: Sequence[Column]) -> None:
        self.definitions = definitions
        self._groups: list[_Group] = []
        self._starts: list[int] = []
        self._index: KeyIndex | None = None
        self._datanodes: dict[int, dict[int, Packed]] = {}
        self._recent: dict[str, Packed] = {}
        self._lock = threading.Lock()

    def add(self, kind: int, keys: pa.Array, columns: Columns) -> None:
        """Take one checked row group (at load only, before `seal`).

        Raises:
            SnapshotError: A `__dn_table` key does not name its row.
        """
        start = len(self)
        indexed = _datanode_rows(keys, columns) if kind == DATANODE_TABLE else None
        self._groups.append(_Group(kind, start, keys, columns, indexed))
        self._starts.append(start)

    def seal(self) -> None:
        """Index the keys once every row group is added (at load, before the map is shared).

        Raises:
            SnapshotError: A key is held twice (keys are unique per view).
        """
        self._index = KeyIndex([group.keys for group in self._groups])

    def _lookup(self) -> KeyIndex:
        index = self._index
        if index is None:  # a map built by hand (tests): sealed on first use
            self.seal()
            index = self._index
            assert index is not None
        return index

    def __len__(self) -> int:
        last = self._groups[-1] if self._groups else None
        return 0 if last is None else last.start + len(last.keys)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._lookup().row(key) is not None

    def __iter__(self) -> Iterator[str]:
        for group in self._groups:
            yield from group.keys.to_pylist()

    def get(self, key: str) -> Packed | None:
        """The packed value under `key`, built from its row; None if the key is not held."""
        recent = self._recent
        value = recent.get(key)
        if value is not None:
            return value
        row = self._lookup().row(key)
        if row is None:
            return None
        group = self._groups[bisect.bisect_right(self._starts, row) - 1]
        at = row - group.start
        one = {name: array.slice(at, 1) for name, array in group.columns.items()}
        value = READERS[group.kind](one, self.definitions)[0]
        # A change reads a key more than once (its requirement, then the table's
        # version); values are immutable, so the last few built are kept to share.
        if len(recent) >= _RECENT:
            recent.clear()
        recent[key] = value
        return value

    def items(self, prefix: str = "") -> Iterator[tuple[str, Packed]]:
        """Every key (that starts with `prefix`) and its packed value, in row order,
        built a row group at a time; a group without such a key is not built."""
        for group in self._groups:
            names: list[str] = group.keys.to_pylist()
            keep = [name.startswith(prefix) for name in names] if prefix else None
            if keep is not None and not any(keep):
                continue
            values = READERS[group.kind](group.columns, self.definitions)
            if keep is None or all(keep):
                yield from zip(names, values, strict=True)
            else:
                yield from ((n, v) for n, v, k in zip(names, values, keep, strict=True) if k)

    def untouched(self, changes: Mapping[str, object]) -> Iterator[tuple[int, list[str], Columns]]:
        """Each row group's kind, keys and columns, less the rows whose key `changes` holds.

        For a snapshot write: the rows go back out as they came in, unbuilt.
        """
        for group in self._groups:
            names: list[str] = group.keys.to_pylist()
            columns = group.columns
            if changes:
                keep = [key not in changes for key in names]
                if not all(keep):
                    mask = pa.array(keep, pa.bool_())
                    names = [key for key, kept in zip(names, keep, strict=True) if kept]
                    columns = {name: array.filter(mask) for name, array in columns.items()}
            if names:
                yield group.kind, names, columns

    def datanode_tables(self, datanode_id: int) -> dict[int, Packed]:
        """Table id → packed value of each `__dn_table/{datanode_id}/{table}` key held.

        Built from the datanode's rows (found by their `datanode_id` column,
        which `add` checked against the keys) on the first call, then kept.
        """
        found = self._datanodes.get(datanode_id)
        if found is None:
            found = {}
            for group in self._groups:
                if group.kind != DATANODE_TABLE:
                    continue
                mask = pc.equal(group.columns["datanode_id"], int_scalar(datanode_id))
                if group.indexed is not None:
                    mask = pc.and_(mask, group.indexed)
                if pc.any(mask).as_py():
                    rows = {name: array.filter(mask) for name, array in group.columns.items()}
                    values = READERS[DATANODE_TABLE](rows, self.definitions)
                    found.update((v.table_id, v) for v in values)  # type: ignore[union-attr]
            with self._lock:
                found = self._datanodes.setdefault(datanode_id, found)
        return found


def _datanode_rows(keys: pa.Array, columns: Columns) -> pa.Array | None:
    """Which rows of a datanode-table group have a `__dn_table/…` key (None: all of them).

    Raises:
        SnapshotError: Such a key does not name the row's datanode and table.
    """
    indexed = pc.starts_with(keys, _DATANODE_PREFIX)
    expected = pc.binary_join_element_wise(
        string_scalar(_DATANODE_TABLE),
        pc.cast(columns["datanode_id"], pa.string()),
        pc.cast(columns["table_id"], pa.string()),
        string_scalar("/"),
    )
    if not pc.all(pc.or_(pc.invert(indexed), pc.equal(keys, expected))).as_py():
        raise SnapshotError("a `__dn_table` key does not name its row's datanode and table")
    return None if pc.all(indexed).as_py() else indexed


# -- readers: a row group's (or one row's) columns → packed values ----------------


def _ints(array: pa.Array) -> list[int]:
    return array.to_pylist()


def _strings(array: pa.Array) -> list[str]:
    if isinstance(array, pa.DictionaryArray) and len(array) >= len(array.dictionary):
        words = array.dictionary.to_pylist()  # shared: one string per distinct value
        return [words[i] for i in _ints(array.indices)]
    return array.to_pylist()


def _offsets(array: pa.ListArray | pa.MapArray) -> tuple[list[int], int, int]:
    """A list column's offsets from 0, and the span of its flat values (slices included)."""
    offsets = _ints(array.offsets)
    first, last = offsets[0], offsets[-1]
    if first:
        offsets = [o - first for o in offsets]
    return offsets, first, last - first


def _lists(array: pa.ListArray) -> tuple[list[int], pa.Array]:
    """A list column's offsets and the flat values they index."""
    offsets, first, size = _offsets(array)
    flat = array.values
    return offsets, flat if first == 0 and size == len(flat) else flat.slice(first, size)


def _infos(columns: Columns, definitions: Sequence[Column]) -> Sequence[Packed]:
    offsets, flat = _lists(columns["columns"])
    shared = list(map(definitions.__getitem__, _ints(flat)))
    column_tuples = [tuple(shared[a:b]) for a, b in pairwise(offsets)]
    keys_at, pk_flat = _lists(columns["primary_key"])
    pk_names = pk_flat.to_pylist()
    keys: dict[tuple[str, ...], tuple[str, ...]] = {}
    primary_keys = [
        keys.setdefault(pk, pk) for pk in (tuple(pk_names[a:b]) for a, b in pairwise(keys_at))
    ]
    options = columns["options"]
    option_at, first, size = _offsets(options)
    names = options.keys.slice(first, size).to_pylist()
    items = options.items.slice(first, size).to_pylist()
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


def _names(columns: Columns, _: Sequence[Column]) -> Sequence[Packed]:
    return list(map(PackedName, _ints(columns["table_id"])))


def _routes(columns: Columns, _: Sequence[Column]) -> Sequence[Packed]:
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


def _datanode_tables(columns: Columns, _: Sequence[Column]) -> Sequence[Packed]:
    offsets, flat = _lists(columns["regions"])
    regions = _ints(flat)
    return [
        PackedDatanodeTable(datanode, table_id, tuple(regions[a:b]), version)
        for datanode, table_id, version, (a, b) in zip(
            _ints(columns["datanode_id"]), _ints(columns["table_id"]), _ints(columns["version"]),
            pairwise(offsets), strict=True,
        )
    ]  # fmt: skip


def _rules(columns: Columns, _: Sequence[Column]) -> Sequence[Packed]:
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


READERS: dict[int, Reader] = {
    INFO: _infos,
    NAME: _names,
    ROUTE: _routes,
    DATANODE_TABLE: _datanode_tables,
    RULE: _rules,
}
"""Kind → the reader that builds its packed values from its columns."""
