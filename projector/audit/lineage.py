"""Which table each change belongs to, across the id changes of truncate and exchange.

A table keeps its identity (a lineage) while its id changes: truncate gives
it a new id (TiDB), and exchange partition gives the plain table the
partition's id. A rename or a drop/recover keeps the id. `Lineage.apply`
takes each event's `Step` in log order (`projector.audit.history_raw` reads
them from the records' bytes); pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

QualifiedName = tuple[str, str]
"""(schema, table)."""


class Step(NamedTuple):
    """What one event does to the lineages, read from its bytes.

    Attributes:
        tables: The table ids of the envelope.
        table_id: The intent's `table_id` (None: it has none).
        created: A `TableCreated`'s name (the new table is `table_id`).
        moved: A truncate's or an exchange's (old id, new id) of the moving lineage.
        named: The name a rename or a recover gives `table_id`.
    """

    tables: tuple[int, ...]
    table_id: int | None
    created: QualifiedName | None = None
    moved: tuple[int, int] | None = None
    named: QualifiedName | None = None


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

    def apply(self, step: Step) -> int | None:
        """Take the step's creation, id change or name; the lineage it created (or None)."""
        table_id = step.table_id
        if step.created is not None and table_id is not None:
            lineage = len(self.ids) + 1
            self.owner[table_id] = lineage
            self.ids[lineage] = [table_id]
            self.names[lineage] = [step.created]
            self.holder[step.created] = lineage
            return lineage
        if step.moved is not None:
            self._move(*step.moved)
        elif step.named is not None and table_id is not None:
            self._name(table_id, step.named)
        return None

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

    def by_name(self, name: QualifiedName) -> int | None:
        """The lineage that held `name` last (the newest created or renamed to it)."""
        return self.holder.get(name)

    def by_id(self, table_id: int) -> int | None:
        """The lineage that had `table_id` last."""
        current = self.owner.get(table_id)
        if current is not None:
            return current
        return max((n for n, ids in self.ids.items() if table_id in ids), default=None)
