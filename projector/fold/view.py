"""A view: one consistent state of a catalog's key/value space, with its indexes.

The image holds two views (DESIGN.md, "Words"): `head`, everything committed,
which the leader decides on, and `published`, what followers show. Their
changes are persistent maps (`immutables.Map`, a HAMT), so a new view shares
all but O(log n) nodes with the previous one; a view loaded from a snapshot
keeps the snapshot's values in their columns beneath (`projector.fold.layered`).
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from immutables import Map

from events.changes import (
    KeyAbsent,
    KeyAtVersion,
    KeyPresent,
    Requirement,
)
from events.keys import (
    LABEL_RULE,
    TABLE_INFO,
    datanode_table_key,
    removed,
    table_info_key,
    table_name_key,
    table_route_key,
)
from events.labels import effective_labels, rules_of
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
    holds_key,
    read,
)
from projector.fold.packed_events import FORM
from projector.fold.packing import (
    Packed,
    PackedDatanodeTable,
    PackedName,
    unpack,
)

RULE_PREFIX = LABEL_RULE + "/"
_REMOVED_INFO_PREFIX = removed(TABLE_INFO) + "/"
_VERSIONED = (TableInfoValue, PackedDatanodeTable)
"""The packed values with a `version` (what `KeyAtVersion` reads)."""
_ABSENT, _AT_VERSION, _PRESENT = (
    frozenset({kind, FORM[kind]}) for kind in (KeyAbsent, KeyAtVersion, KeyPresent)
)
"""A requirement's class, or its form as a replay reads it (`packed_events`)."""

EMPTY_TABLES: Map[int, None] = Map()
"""No table ids: a datanode's index before its first table."""


class Reads:
    """What the fold checks a change against: tables' versions and requirements.

    One home for the reads a `View` and a `Draft` share; each gives `_get` and `_has`.
    """

    __slots__ = ()

    _get: Callable[[str], Packed | None]
    """The packed value under a key, or None."""
    _has: Callable[[str], bool]
    """Whether a key holds a value."""

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
        kind = type(requirement)  # exact classes (a model's or its form's): no isinstance chain
        if kind in _ABSENT:
            return not self._has(requirement.key)
        if kind in _AT_VERSION:
            packed = self._get(requirement.key)
            return type(packed) in _VERSIONED and packed.version == requirement.version  # type: ignore[union-attr]
        if kind in _PRESENT:
            return self._has(requirement.key)
        assert requirement.type == "ValueEquals"
        packed = self._get(requirement.key)
        # A replay's event holds its value packed (`packed_events`).
        return packed is not None and unpack(packed) == unpack(requirement.value)


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
            key[len(RULE_PREFIX) :]: packed
            for key, packed in rules
            if isinstance(packed, LabelRuleValue) and key.startswith(RULE_PREFIX)
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
        for table_id in self.changed_datanodes.get(datanode_id, EMPTY_TABLES):
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
        """The effective labels of a live table or partition (a partition's own keys win).

        Only rules whose ranges cover the table's (or partition's) id count
        (`events.labels.owned_rule`): a dropped table's rule under the same
        name is not this table's. No live table of that name: no labels.
        """
        table = self.table_by_name(schema_name, table_name)
        if table is None:
            return ()
        table_rule, partition_rules = rules_of(table, self.rules.get)
        if partition_name is None:
            return effective_labels(table_rule, None)
        return effective_labels(table_rule, partition_rules.get(partition_name))
