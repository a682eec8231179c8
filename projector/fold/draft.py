"""A draft: a view being changed, its writes kept in a dict and built into a new `View` once.

`Folding` writes a run of events to one; `mutated` one batch of mutations.
"""

from collections.abc import Iterable

from immutables import Map, MapMutation

from events.changes import Mutation, MutationOp
from events.keys import DATANODE_TABLE, TABLE_NAME, datanode_table_ids
from events.values import KeyValue, LabelRuleValue, TableInfoValue, TableNameValue
from projector.fold.layered import LayeredValues, WrittenValues, delete, holds_key, read
from projector.fold.packing import KEPT_AS_IS, POOLED_INFO, Packed, PackedName, pack
from projector.fold.view import EMPTY_TABLES, RULE_PREFIX, Reads, View

_DATANODE_PREFIX = DATANODE_TABLE + "/"
NAME_PREFIX = TABLE_NAME + "/"
_INDEXED_PREFIXES = (_DATANODE_PREFIX, RULE_PREFIX, NAME_PREFIX)

NameMove = tuple[str, int | None, int | None]
"""A `__table_name/…` key whose table changed: (key, the id it left, the id it took), None
for no id (a name freed or a free name taken)."""


def mutated(view: View, mutations: Iterable[Mutation]) -> View:
    """A new view with the mutations applied in order (a DELETE of an absent key is a no-op)."""
    draft = Draft(view)
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
        "_get",
        "_has",
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
        # The reads (`Reads`): with nothing below, the dict's own methods, called in C.
        if self._below is None:
            self._get = self._written.get
            self._has = self._written.__contains__
        else:
            self._get = self._get_below
            self._has = self._has_below

    def _get_below(self, key: str) -> Packed | None:
        found = self._written.get(key)
        if found is None and key not in self._deleted:
            assert self._below is not None
            return read(*self._below, key)
        return found

    def _has_below(self, key: str) -> bool:
        if key in self._written:
            return True
        assert self._below is not None
        return key not in self._deleted and holds_key(*self._below, key)

    def write(self, mutations: Iterable[Mutation]) -> tuple[list[TableInfoValue], list[NameMove]]:
        """Apply the mutations in order (a DELETE of an absent key is a no-op).

        Returns:
            The table infos the mutations PUT, in order, and the names whose table
            changed, in order (what `Image.name_versions` follows).
        """
        written = self._written
        deleted = self._deleted
        settling = self._settling
        changes = self._view.values.changes
        infos: list[TableInfoValue] = []
        moves: list[NameMove] = []
        put_op = MutationOp.PUT
        for mutation in mutations:
            key = mutation.key
            value = mutation.value
            put = mutation.op is put_op
            indexed = key.startswith(_INDEXED_PREFIXES)
            if indexed and key.startswith(NAME_PREFIX):
                self._move(moves, key, value if put else None)
            if put:
                assert value is not None
                if type(value) is not TableInfoValue:
                    # A replay reads names, routes and datanode tables packed already.
                    kept = type(value) in KEPT_AS_IS
                    written[key] = value if kept else pack(value)  # type: ignore[assignment]
                else:
                    infos.append(value)
                    if value.__pydantic_fields_set__ is POOLED_INFO:
                        written[key] = value  # read pooled: `pack` would keep it as it is
                    else:
                        # Only a changed value's columns are shared: a cold one is not built.
                        previous = written.get(key)
                        if previous is None and key not in deleted:
                            previous = changes.get(key)  # type: ignore[assignment]
                        written[key] = pack(value, previous)
                if deleted:
                    deleted.pop(key, None)
            else:
                written.pop(key, None)
                deleted[key] = None
            if indexed:
                if key.startswith(_DATANODE_PREFIX):
                    if not settling:
                        self._index(key, put)
                elif key.startswith(RULE_PREFIX):
                    self._rule(key[len(RULE_PREFIX) :], value if put else None)
        return infos, moves

    def _move(self, moves: list[NameMove], key: str, value: object) -> None:
        """Note a name key's change of table (`value`: what is PUT, None for a DELETE),
        read before it is written."""
        held = self._get(key)
        holder = held.table_id if isinstance(held, PackedName) else None
        taker = value.table_id if isinstance(value, TableNameValue | PackedName) else None
        if holder != taker:
            moves.append((key, holder, taker))

    def _index(self, key: str, put: bool) -> None:
        """Add or remove the table of a `__dn_table/{datanode}/{table}` key under its datanode."""
        datanode, table = datanode_table_ids(key)
        tables = self._tables_of.get(datanode)
        if tables is None:
            tables = self._tables_of[datanode] = self._view.changed_datanodes.get(
                datanode, EMPTY_TABLES
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
