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
from projector.fold.layered import Cold, Gone, LayeredValues, delete
from projector.fold.packing import Packed, PackedDatanodeTable, PackedName, pack, unpack

_DATANODE_PREFIX = DATANODE_TABLE + "/"
_RULE_PREFIX = LABEL_RULE + "/"
_REMOVED_INFO_PREFIX = removed(TABLE_INFO) + "/"

_EMPTY: Map[int, None] = Map()


@dataclass(frozen=True, slots=True, eq=False)
class View:
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

    def table(self, table_id: int) -> TableInfoValue | None:
        """The live table with this id."""
        return self._info(table_info_key(table_id))

    def dropped_table(self, table_id: int) -> TableInfoValue | None:
        """The dropped (not yet purged) table with this id."""
        return self._info(removed(table_info_key(table_id)))

    def _info(self, key: str) -> TableInfoValue | None:
        packed = self.values.get(key)
        return packed if isinstance(packed, TableInfoValue) else None

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

    def version_of(self, table_id: int) -> int:
        """The table's version: its live or dropped info's; 0 for an id without one."""
        info = self.table(table_id) or self.dropped_table(table_id)
        return 0 if info is None else info.version

    def holds(self, requirement: Requirement) -> bool:
        """Whether a compare condition holds on this view."""
        if isinstance(requirement, KeyAbsent):
            return requirement.key not in self.values
        if isinstance(requirement, KeyPresent):
            return requirement.key in self.values
        packed = self.values.get(requirement.key)
        if isinstance(requirement, KeyAtVersion):
            return isinstance(packed, TableInfoValue | PackedDatanodeTable) and (
                packed.version == requirement.version
            )
        assert isinstance(requirement, ValueEquals)
        return packed is not None and unpack(packed) == requirement.value

    def mutated(self, mutations: Iterable[Mutation]) -> "View":
        """A new view with the mutations applied in order (a DELETE of an absent key is a no-op)."""
        cold = self.values.cold
        values = self.values.changes.mutate()
        # The indexes change rarely: open their mutations only when a key needs them.
        datanodes: MapMutation[int, Map[int, None]] | None = None
        rules: MapMutation[str, LabelRuleValue] | None = None
        for mutation in mutations:
            key = mutation.key
            put = mutation.op is MutationOp.PUT
            if put:
                assert mutation.value is not None
                value = mutation.value
                # Only a changed value's columns are shared: a cold one is not built for it.
                previous = values.get(key) if type(value) is TableInfoValue else None
                values[key] = pack(value, previous)  # type: ignore[arg-type]
            else:
                delete(values, cold, key)
            if key.startswith(_DATANODE_PREFIX):
                if datanodes is None:
                    datanodes = self.changed_datanodes.mutate()
                _index(datanodes, *_datanode_key(key), put)
            elif key.startswith(_RULE_PREFIX):
                rule = key[len(_RULE_PREFIX) :]
                if rules is None:
                    rules = self.rules.mutate()
                if put:
                    assert isinstance(mutation.value, LabelRuleValue)
                    rules[rule] = mutation.value
                else:
                    rules.pop(rule, None)
        return View(
            self.catalog,
            LayeredValues(cold, values.finish()),
            self.changed_datanodes if datanodes is None else datanodes.finish(),
            self.rules if rules is None else rules.finish(),
        )


def _datanode_key(key: str) -> tuple[int, int]:
    """(datanode id, table id) of a `__dn_table/{datanode}/{table}` key."""
    datanode, table = key[len(_DATANODE_PREFIX) :].split("/")
    return int(datanode), int(table)


def _index(
    datanodes: MapMutation[int, Map[int, None]], datanode: int, table: int, put: bool
) -> None:
    """Add or remove one table id under a datanode."""
    tables: Map[int, None] = datanodes.get(datanode, _EMPTY)
    if put:
        tables = tables.set(table, None)
    elif table in tables:
        tables = tables.delete(table)
    if tables:
        datanodes[datanode] = tables
    else:
        datanodes.pop(datanode, None)
