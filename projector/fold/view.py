"""A view: one consistent state of a catalog's key/value space, with its indexes.

The image holds two views (DESIGN.md, "Words"): `head`, everything committed,
which the leader decides on, and `published`, what followers show. Their
changes are persistent maps (`immutables.Map`, a HAMT), so a new view shares
all but O(log n) nodes with the previous one; a view loaded from a snapshot
keeps the snapshot's values in their columns beneath (`projector.fold.layered`).
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from immutables import Map, MapMutation

from events.changes import (
    KeyAbsent,
    KeyAtVersion,
    KeyPresent,
    Mutation,
    MutationOp,
    Requirement,
    ValueEquals,
)
from events.keys import (
    DATANODE_TABLE,
    LABEL_RULE,
    TABLE_INFO,
    datanode_table_ids,
    datanode_table_key,
    removed,
    table_info_key,
    table_name_key,
    table_route_key,
)
from events.labels import effective_labels, rule_id
from events.values import (
    DatanodeTableValue,
    KeyValue,
    Label,
    LabelRuleValue,
    TableInfoValue,
    TableRouteValue,
)
from projector.fold.layered import (
    Cold,
    Gone,
    LayeredValues,
    WrittenValues,
    delete,
    holds_key,
    read,
)
from projector.fold.packing import (
    POOLED_INFO,
    Packed,
    PackedDatanodeTable,
    PackedName,
    pack,
    unpack,
)

_DATANODE_PREFIX = DATANODE_TABLE + "/"
_RULE_PREFIX = LABEL_RULE + "/"
_REMOVED_INFO_PREFIX = removed(TABLE_INFO) + "/"
_INDEXED_PREFIXES = (_DATANODE_PREFIX, _RULE_PREFIX)
_VERSIONED = (TableInfoValue, PackedDatanodeTable)
"""The packed values with a `version` (what `KeyAtVersion` reads)."""

_EMPTY: Map[int, None] = Map()


class Reads:
    """What the fold checks a change against: tables' versions and requirements.

    One home for the reads a `View` and a `Draft` share; each gives `_get` and `_has`.
    """

    __slots__ = ()

    def _get(self, key: str) -> Packed | None:
        raise NotImplementedError

    def _has(self, key: str) -> bool:
        raise NotImplementedError

    def table(self, table_id: int) -> TableInfoValue | None:
        """The live table with this id."""
        packed = self._get(table_info_key(table_id))
        return packed if isinstance(packed, TableInfoValue) else None

    def dropped_table(self, table_id: int) -> TableInfoValue | None:
        """The dropped (not yet purged) table with this id."""
        packed = self._get(removed(table_info_key(table_id)))
        return packed if isinstance(packed, TableInfoValue) else None

    def version_of(self, table_id: int) -> int:
        """The table's version: its live or dropped info's; 0 for an id without one."""
        key = table_info_key(table_id)
        info = self._get(key)
        if type(info) is not TableInfoValue:
            info = self._get(removed(key))
        return info.version if type(info) is TableInfoValue else 0

    def holds(self, requirement: Requirement) -> bool:
        """Whether a compare condition holds on this view."""
        kind = type(requirement)  # exact classes (none is subclassed): no isinstance chain
        if kind is KeyAbsent:
            return not self._has(requirement.key)
        if kind is KeyAtVersion:
            packed = self._get(requirement.key)
            return type(packed) in _VERSIONED and packed.version == requirement.version  # type: ignore[union-attr]
        if kind is KeyPresent:
            return self._has(requirement.key)
        assert isinstance(requirement, ValueEquals)
        packed = self._get(requirement.key)
        return packed is not None and unpack(packed) == requirement.value


@dataclass(frozen=True, slots=True, eq=False)
class View(Reads):
    """An immutable key/value state plus derived indexes; equal when the keys are.

    Attributes:
        catalog: The catalog the keys belong to.
        values: Every key and its packed value (see `projector.fold.packing`): a
            loaded snapshot's cold values under the changes since (`projector.fold.layered`).
        changed_datanodes: Datanode id → the ids of the tables whose
            `__dn_table` key is held in `values.changes` (the cold ones are
            indexed by `values.cold`); see `datanode_table_ids`.
        rules: Label rule id → rule, so rules can be listed without a scan.
    """

    catalog: str
    values: LayeredValues = field(default_factory=LayeredValues)
    changed_datanodes: Map[int, Map[int, None]] = field(default_factory=Map)
    rules: Map[str, LabelRuleValue] = field(default_factory=Map)

    @classmethod
    def from_cold(cls, catalog: str, cold: Cold, rules: Iterable[tuple[str, Packed]]) -> "View":
        """A view over a loaded snapshot's values, with the indexes `mutated` keeps.

        Args:
            catalog: The catalog.
            cold: The snapshot's values (`projector.snapshot.cold`); it indexes its
                datanode-table rows per datanode when first asked.
            rules: Its `__label_rule/…` keys and their values (the loader
                builds them: there are few).
        """
        index = {
            key[len(_RULE_PREFIX) :]: packed
            for key, packed in rules
            if isinstance(packed, LabelRuleValue) and key.startswith(_RULE_PREFIX)
        }
        return cls(catalog, LayeredValues(cold), Map(), Map(index))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, View):
            return NotImplemented
        return self.catalog == other.catalog and self.values == other.values

    def __hash__(self) -> int:
        return hash((self.catalog, len(self.values)))

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, key: object) -> bool:
        return key in self.values

    def get(self, key: str) -> KeyValue | None:
        """The value under `key`, or None."""
        packed = self.values.get(key)
        return None if packed is None else unpack(packed)

    def items(self) -> Iterator[tuple[str, KeyValue]]:
        """Every key and its value, in no particular order."""
        for key, packed in self.values.items():
            yield key, unpack(packed)

    def _get(self, key: str) -> Packed | None:
        values = self.values
        return read(values.changes, values.cold, key)

    def _has(self, key: str) -> bool:
        values = self.values
        return holds_key(values.changes, values.cold, key)

    def dropped_tables(self) -> Iterator[TableInfoValue]:
        """Every dropped, not yet purged table; a scan of all keys (recover by name is rare)."""
        for key in self.values:
            if key.startswith(_REMOVED_INFO_PREFIX):
                packed = self.values.get(key)
                if isinstance(packed, TableInfoValue):
                    yield packed

    def table_id(self, schema_name: str, table_name: str) -> int | None:
        """The id the name `{schema}.{table}` points to."""
        packed = self.values.get(table_name_key(self.catalog, schema_name, table_name))
        return packed.table_id if isinstance(packed, PackedName) else None

    def table_by_name(self, schema_name: str, table_name: str) -> TableInfoValue | None:
        """The live table named `{schema}.{table}`."""
        table_id = self.table_id(schema_name, table_name)
        return None if table_id is None else self.table(table_id)

    def route(self, table_id: int) -> TableRouteValue | None:
        """The live table's region routes."""
        value = self.get(table_route_key(table_id))
        return value if isinstance(value, TableRouteValue) else None

    def dropped_route(self, table_id: int) -> TableRouteValue | None:
        """The dropped table's region routes."""
        value = self.get(removed(table_route_key(table_id)))
        return value if isinstance(value, TableRouteValue) else None

    def datanode_entries(self, datanode_id: int) -> dict[int, Packed]:
        """Table id → packed value of each `__dn_table/{datanode_id}/{table}` key, unordered.

        Cold keys come from the cold layer's per-datanode rows (built once),
        not one lookup each.
        """
        changes = self.values.changes
        entries: dict[int, Packed] = {}
        cold = self.values.cold
        if cold is not None:
            for table_id, packed in cold.datanode_tables(datanode_id).items():
                if datanode_table_key(datanode_id, table_id) not in changes:
                    entries[table_id] = packed
        for table_id in self.changed_datanodes.get(datanode_id, _EMPTY):
            change = changes[datanode_table_key(datanode_id, table_id)]
            assert not isinstance(change, Gone)  # the index holds only the keys held
            entries[table_id] = change
        return entries

    def datanode_table_ids(self, datanode_id: int) -> tuple[int, ...]:
        """The ids of the tables a datanode holds a `__dn_table` key for, ascending."""
        return tuple(sorted(self.datanode_entries(datanode_id)))

    def datanode_tables(self, datanode_id: int) -> tuple[DatanodeTableValue, ...]:
        """The regions a datanode serves, one value per table, by table id."""
        entries = self.datanode_entries(datanode_id)
        values = (unpack(entries[table_id]) for table_id in sorted(entries))
        return tuple(v for v in values if isinstance(v, DatanodeTableValue))

    def label_rule(self, rule: str) -> LabelRuleValue | None:
        """The label rule with this id (`schema/{db}/{table}[/{partition}]`)."""
        return self.rules.get(rule)

    def label_rules(self) -> tuple[LabelRuleValue, ...]:
        """Every label rule, by rule id."""
        return tuple(self.rules[rule] for rule in sorted(self.rules))

    def attributes(
        self, schema_name: str, table_name: str, partition_name: str | None = None
    ) -> tuple[Label, ...]:
        """The effective labels of a table or a partition (a partition's own keys win)."""
        table_rule = self.rules.get(rule_id(schema_name, table_name))
        if partition_name is None:
            return effective_labels(table_rule, None)
        own = self.rules.get(rule_id(schema_name, table_name, partition_name))
        return effective_labels(table_rule, own)

    def mutated(self, mutations: Iterable[Mutation]) -> "View":
        """A new view with the mutations applied in order (a DELETE of an absent key is a no-op)."""
        draft = Draft(self)
        draft.write(mutations)
        return draft.finish()


class Draft(Reads):
    """A view being changed: mutations written to a dict, then finished into a new `View`.

    The fold writes a run of events to one draft (`projector.fold.apply.Folding`) and
    builds the view once: the run's writes go to a plain dict (the last value per key),
    and the persistent maps take them in one pass at `finish`, instead of a new view and
    a HAMT path copied per event. Reads see every write so far. The view it starts from
    never changes; after `finish` the draft is spent.

    Args:
        view: The view to start from.
        settle: A run of many events (a replay): if `view` is empty, the dict of
            writes becomes the finished view's cold layer (`WrittenValues`, which
            indexes its datanode keys itself) rather than a HAMT built key by key.
            A view changed event by event keeps a HAMT: each change copies O(log n).
    """

    __slots__ = (
        "_below",
        "_cold",
        "_deleted",
        "_rules",
        "_settling",
        "_tables_of",
        "_view",
        "_written",
    )

    def __init__(self, view: View, settle: bool = False) -> None:
        self._view = view
        self._cold = view.values.cold
        changes = view.values.changes
        self._below = None if self._cold is None and not changes else (changes, self._cold)
        """What the view held before the draft; None when nothing (a replay from empty)."""
        self._settling = settle and self._below is None
        self._written: dict[str, Packed] = {}
        """Key → the packed value it was last PUT, unless deleted since."""
        self._deleted: dict[str, None] = {}
        """The keys last deleted (`delete`d at `finish`); never in `_written`."""
        self._tables_of: dict[int, MapMutation[int, None]] = {}
        """Datanode id → its changed table ids, for the keys written."""
        # Rules change rarely: open their mutation only when a key needs it.
        self._rules: MapMutation[str, LabelRuleValue] | None = None

    def _get(self, key: str) -> Packed | None:
        found = self._written.get(key)
        if found is None and self._below is not None and key not in self._deleted:
            return read(*self._below, key)
        return found

    def _has(self, key: str) -> bool:
        if key in self._written:
            return True
        below = self._below
        return below is not None and key not in self._deleted and holds_key(*below, key)

    def write(self, mutations: Iterable[Mutation]) -> None:
        """Apply the mutations in order (a DELETE of an absent key is a no-op)."""
        written = self._written
        deleted = self._deleted
        settling = self._settling
        changes = self._view.values.changes
        for mutation in mutations:
            key = mutation.key
            value = mutation.value
            put = mutation.op is MutationOp.PUT
            if put:
                assert value is not None
                if type(value) is not TableInfoValue:
                    written[key] = pack(value)
                elif value.__pydantic_fields_set__ is POOLED_INFO:
                    written[key] = value  # read pooled: `pack` would keep it as it is
                else:
                    # Only a changed value's columns are shared: a cold one is not built for it.
                    previous = written.get(key)
                    if previous is None and key not in deleted:
                        previous = changes.get(key)  # type: ignore[assignment]
                    written[key] = pack(value, previous)
                if deleted:
                    deleted.pop(key, None)
            else:
                written.pop(key, None)
                deleted[key] = None
            if key.startswith(_INDEXED_PREFIXES):
                if key.startswith(_DATANODE_PREFIX):
                    if not settling:
                        self._index(key, put)
                else:
                    self._rule(key[len(_RULE_PREFIX) :], value if put else None)

    def _index(self, key: str, put: bool) -> None:
        """Add or remove the table of a `__dn_table/{datanode}/{table}` key under its datanode."""
        datanode, table = datanode_table_ids(key)
        tables = self._tables_of.get(datanode)
        if tables is None:
            tables = self._tables_of[datanode] = self._view.changed_datanodes.get(
                datanode, _EMPTY
            ).mutate()
        if put:
            tables[table] = None
        else:
            tables.pop(table, None)

    def _rule(self, rule: str, value: KeyValue | None) -> None:
        if self._rules is None:
            self._rules = self._view.rules.mutate()
        if value is None:
            self._rules.pop(rule, None)
        else:
            assert isinstance(value, LabelRuleValue)
            self._rules[rule] = value

    def finish(self) -> View:
        """The view with every write; the draft is spent."""
        view = self._view
        cold = self._cold
        rules = view.rules if self._rules is None else self._rules.finish()
        if self._settling:  # nothing below: every key is in `_written`
            return View(view.catalog, LayeredValues(WrittenValues(self._written)), Map(), rules)
        values = view.values.changes.mutate()
        values.update(self._written)
        for key in self._deleted:
            delete(values, cold, key)
        datanodes = view.changed_datanodes
        if self._tables_of:
            index = datanodes.mutate()
            for datanode, mutation in self._tables_of.items():
                tables = mutation.finish()
                if tables:
                    index[datanode] = tables
                else:
                    index.pop(datanode, None)
            datanodes = index.finish()
        return View(
            view.catalog,
            LayeredValues(cold, values.finish()),
            datanodes,
            rules,
        )
