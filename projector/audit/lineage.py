"""Which table each change belongs to, across the id changes of truncate and exchange.

A table keeps its identity (a lineage) while its id changes: truncate gives
it a new id (TiDB), and exchange partition gives the plain table the
partition's id. A rename or a drop/recover keeps the id. `Lineage.step`
reads events in log order and says which lineages each one touches; pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from events.event import Event
from events.intents import (
    PartitionExchanged,
    TableCreated,
    TableRecovered,
    TableRenamed,
    TableTruncated,
)

QualifiedName = tuple[str, str]
"""(schema, table)."""


@dataclass(slots=True)
class Lineage:
    """Table id → lineage number, and each lineage's names, over a prefix of the log.

    Attributes:
        owner: Each current table id → its lineage (a number from 1, in creation order).
        names: Each lineage → its (schema, table) names, oldest first.
        ids: Each lineage → the table ids it had, oldest first.
        holder: Each (schema, table) name → the lineage that took it last.
    """

    owner: dict[int, int] = field(default_factory=dict)
    names: dict[int, list[QualifiedName]] = field(default_factory=dict)
    ids: dict[int, list[int]] = field(default_factory=dict)
    holder: dict[QualifiedName, int] = field(default_factory=dict)

    def step(self, event: Event) -> tuple[int, ...]:
        """The lineages `event` touches (before and after its id changes), ascending."""
        intent = event.intent
        touched = {self.owner[t.table_id] for t in event.tables if t.table_id in self.owner}
        table_id = getattr(intent, "table_id", None)
        if table_id in self.owner:
            touched.add(self.owner[table_id])
        if isinstance(intent, TableCreated):
            lineage = len(self.ids) + 1
            self.owner[intent.table_id] = lineage
            self.ids[lineage] = [intent.table_id]
            self.names[lineage] = [(intent.schema_name, intent.table_name)]
            self.holder[(intent.schema_name, intent.table_name)] = lineage
            touched.add(lineage)
        elif isinstance(intent, TableTruncated):
            self._move(intent.table_id, intent.new_table_id)
        elif isinstance(intent, PartitionExchanged):
            self._move(intent.other_table_id, intent.partition_id)
        elif isinstance(intent, TableRenamed):
            self._name(intent.table_id, (intent.schema_name, intent.new_table_name))
        elif isinstance(intent, TableRecovered):
            self._name(intent.table_id, (intent.schema_name, intent.table_name))
        return tuple(sorted(touched))

    def _move(self, old: int, new: int) -> None:
        lineage = self.owner.pop(old, None)
        if lineage is not None:
            self.owner[new] = lineage
            self.ids[lineage].append(new)

    def _name(self, table_id: int, name: QualifiedName) -> None:
        lineage = self.owner.get(table_id)
        if lineage is None:
            return
        self.holder[name] = lineage
        if self.names[lineage][-1] != name:
            self.names[lineage].append(name)

    def current_id(self, lineage: int) -> int:
        """The lineage's table id now."""
        return self.ids[lineage][-1]

    def by_name(self, name: QualifiedName) -> int | None:
        """The lineage that held `name` last (the newest created or renamed to it)."""
        return self.holder.get(name)

    def by_id(self, table_id: int) -> int | None:
        """The lineage that had `table_id` last."""
        current = self.owner.get(table_id)
        if current is not None:
            return current
        return max((n for n, ids in self.ids.items() if table_id in ids), default=None)
