"""A view's keys and packed values: an optional cold layer under a HAMT of the changes since.

A follower that starts from a snapshot keeps the snapshot's values in their
columns (a `Cold` layer, built on read); every PUT and DELETE
since goes to `changes`, an `immutables.Map`, so a new map still shares all
but O(log n) nodes with the previous one. A DELETE of a cold key leaves a
tombstone (`GONE`) in `changes`; a DELETE of a key only `changes` held
removes it. A replay from the empty log writes every key to one dict
(`view.Draft`) and hands it over as the cold layer (`WrittenValues`), instead
of building a HAMT of every key; a view built event by event from nothing has
no cold layer: `changes` is everything.

It reads as a `Mapping[str, Packed]`, and equality is by keys and values,
whatever the layers (a loaded-then-changed map equals the map a full replay
builds). Views apply their mutations to `changes` themselves (`delete` for
a DELETE), as they did to the one HAMT before: the fold's hot path.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Final, Protocol

from immutables import Map, MapMutation

from events.keys import DATANODE_TABLE, datanode_table_ids
from projector.fold.packing import Packed


class Cold(Protocol):
    """A loaded snapshot's values, read in place (`projector.snapshot.cold.ColdValues`).

    The fold sees only this shape, so it never imports the columnar storage
    (pyarrow) behind it.
    """

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def get(self, key: str) -> Packed | None:
        """The packed value under `key`, or None."""

    def items(self, prefix: str = "") -> Iterator[tuple[str, Packed]]:
        """Every key (that starts with `prefix`) and its packed value."""

    def datanode_tables(self, datanode_id: int) -> dict[int, Packed]:
        """Table id → packed `__dn_table` value of one datanode."""


class WrittenValues:
    """A cold layer of the values a replay wrote: a plain dict, never changed again.

    Args:
        values: Key → packed value (the draft's dict, taken over, not copied).
    """

    __slots__ = ("_datanodes", "_values")

    def __init__(self, values: dict[str, Packed]) -> None:
        self._values = values
        self._datanodes: dict[int, dict[int, Packed]] | None = None

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def get(self, key: str) -> Packed | None:
        """The packed value under `key`, or None."""
        return self._values.get(key)

    def items(self, prefix: str = "") -> Iterator[tuple[str, Packed]]:
        """Every key (that starts with `prefix`) and its packed value."""
        if not prefix:
            return iter(self._values.items())
        return ((key, value) for key, value in self._values.items() if key.startswith(prefix))

    def datanode_tables(self, datanode_id: int) -> dict[int, Packed]:
        """Table id → packed `__dn_table` value of one datanode (every datanode indexed
        at the first call; two threads asking first both build the same index)."""
        index = self._datanodes
        if index is None:
            index = {}
            for key, value in self.items(DATANODE_TABLE + "/"):
                datanode, table = datanode_table_ids(key)
                index.setdefault(datanode, {})[table] = value
            self._datanodes = index
        return index.get(datanode_id, {})


class Gone:
    """The tombstone type: a cold key deleted since the snapshot."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "GONE"


GONE: Final = Gone()
_MISSING: Final = object()

Change = Packed | Gone


class LayeredValues(Mapping[str, Packed]):
    """Key → packed value: `changes` over `cold`; see the module docstring.

    Args:
        cold: The snapshot's values, or None (a view built by replay).
        changes: The PUTs (packed values) and cold DELETEs (`GONE`) since;
            `GONE` only for keys `cold` holds, and only if there is one.
    """

    __slots__ = ("_size", "changes", "cold")

    def __init__(self, cold: Cold | None = None, changes: Map[str, Change] | None = None) -> None:
        self.cold = cold
        self.changes: Map[str, Change] = Map() if changes is None else changes
        self._size: int | None = None

    def get(self, key: str, default: Packed | None = None) -> Packed | None:  # type: ignore[override]
        """The packed value under `key` (built from its columns if it is cold), or `default`."""
        value = read(self.changes, self.cold, key)
        return default if value is None else value

    def __getitem__(self, key: str) -> Packed:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and holds_key(self.changes, self.cold, key)

    def __len__(self) -> int:
        size = self._size
        if size is None:  # counted once per map: a replayed one is its changes
            cold = self.cold
            if cold is None:
                size = len(self.changes)
            else:
                size = len(cold)
                for key, value in self.changes.items():
                    if value is GONE:
                        size -= 1
                    elif key not in cold:
                        size += 1
            self._size = size
        return size

    def __iter__(self) -> Iterator[str]:
        changes = self.changes
        for key, value in changes.items():
            if value is not GONE:
                yield key
        if self.cold is not None:
            for key in self.cold:
                if key not in changes:
                    yield key

    def items(self) -> ItemsView[str, Packed]:
        """Every key and value; cold values are built a row group at a time (a full scan)."""
        return _Items(self)

    def values(self) -> ValuesView[Packed]:
        """Every value (a full scan, as `items`)."""
        return _Values(self)

    def scan(self, prefix: str) -> Iterator[tuple[str, Packed]]:
        """Every key that starts with `prefix` and its value, in no particular order.

        The cold values are built a row group at a time, and only the groups that
        hold such keys: a scan of one kind of key, as a relation of the query
        engine needs, skips building the others.
        """
        changes = self.changes
        for key, value in changes.items():
            if value is not GONE and key.startswith(prefix):
                yield key, value  # type: ignore[misc]
        if self.cold is not None:
            for key, packed in self.cold.items(prefix):
                if key not in changes:
                    yield key, packed

    def changed_items(self) -> Iterator[tuple[str, Packed]]:
        """The keys PUT since the snapshot and their values (every key, without one)."""
        for key, value in self.changes.items():
            if value is not GONE:
                yield key, value  # type: ignore[misc]

    def _items(self) -> Iterator[tuple[str, Packed]]:
        changes = self.changes
        yield from self.changed_items()
        if self.cold is not None:
            for key, packed in self.cold.items():
                if key not in changes:
                    yield key, packed

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LayeredValues):
            return NotImplemented
        if self is other or (self.cold is other.cold and self.changes is other.changes):
            return True
        if len(self) != len(other):
            return False
        if self.cold is None and other.cold is None:
            return self.changes == other.changes
        if self.cold is other.cold:  # equal outside the changes: compare only those keys
            keys = set(self.changes.keys()) | set(other.changes.keys())
            return all(self.get(key) == other.get(key) for key in keys)
        # Scan the side with a cold layer (built a row group at a time), probe the other.
        scan, probe = (other, self) if self.cold is None else (self, other)
        return all(probe.get(key) == value for key, value in scan._items())

    def __hash__(self) -> int:
        return hash(len(self))

    def __repr__(self) -> str:
        cold = 0 if self.cold is None else len(self.cold)
        return f"LayeredValues({len(self)} keys: {cold} cold, {len(self.changes)} changes)"


ChangeMap = Map[str, Change] | MapMutation[str, Change]
"""The changes over a cold layer: a view's map, or a draft's mutation of it (`view.Draft`)."""


def read(changes: ChangeMap, cold: Cold | None, key: str) -> Packed | None:
    """The packed value under `key` in `changes` over `cold`, or None."""
    found = changes.get(key, _MISSING)
    if found is _MISSING:
        return None if cold is None else cold.get(key)
    return None if found is GONE else found  # type: ignore[return-value]


def holds_key(changes: ChangeMap, cold: Cold | None, key: str) -> bool:
    """Whether `changes` over `cold` hold a value under `key`."""
    found = changes.get(key, _MISSING)
    if found is _MISSING:
        return cold is not None and key in cold
    return found is not GONE


def delete(changes: MapMutation[str, Change], cold: Cold | None, key: str) -> None:
    """Delete `key` in a mutation of `changes` over `cold`: a tombstone if `cold` holds it."""
    if cold is not None and key in cold:
        changes[key] = GONE
    else:
        changes.pop(key, None)


class _Items(ItemsView[str, Packed]):
    _mapping: LayeredValues

    def __iter__(self) -> Iterator[tuple[str, Packed]]:
        return self._mapping._items()


class _Values(ValuesView[Packed]):
    _mapping: LayeredValues

    def __iter__(self) -> Iterator[Packed]:
        return (value for _, value in self._mapping._items())
