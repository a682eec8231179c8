"""One table's history: every change of it, across renames, drop/recover, truncate and exchange.

Pure. `projector.audit.history_raw` reads a catalog's records: it finds the
table's lineage (`projector.audit.lineage`) by its name or an id it had
(`begin` starts the history from it), decodes only the events the history
needs, and `follow` adds the changes: it keeps every key's value (a plain dict
the mutations update, no fold) for the key-level diff of each change, and the
epochs `Publish` and `AdvanceStableEpoch` gave the changes in explicit mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.event import Event
from events.intents import EpochAssigned, StableEpochAdvanced
from events.keys import removed, table_info_key
from events.values import KeyValue, TableInfoValue
from projector.audit.changes import KeyChange, mutation_changes
from projector.audit.ddl import ddl
from projector.audit.lineage import Lineage, QualifiedName
from projector.errors import ReplayError


@dataclass(slots=True)
class TableChange:
    """One change of the table.

    Attributes:
        resource_version: The event's.
        table_id: The table's id after the change.
        version: The table's version after the change.
        name: `schema.table` after the change.
        schema_epoch: The epoch the change was published at (0: still pending).
        published_at: The resource_version that released it to followers (None: pending).
        actor: Who changed it.
        occurred_at: When.
        intent: The intent's type (`TableRenamed`, …).
        statement: The change in DDL words.
        keys: What it did to each key.
    """

    resource_version: int
    table_id: int
    version: int
    name: str
    schema_epoch: int
    published_at: int | None
    actor: str
    occurred_at: datetime
    intent: str
    statement: str
    keys: list[KeyChange]

    def document(self) -> dict[str, Any]:
        """JSON (docs/cli.md, `metalog audit history --json`)."""
        return {
            "resource_version": self.resource_version, "table_id": self.table_id,
            "version": self.version, "name": self.name, "schema_epoch": self.schema_epoch,
            "published_at": self.published_at, "actor": self.actor,
            "occurred_at": self.occurred_at.isoformat(), "intent": self.intent,
            "statement": self.statement, "keys": [k.document() for k in self.keys],
        }  # fmt: skip


@dataclass(slots=True)
class TableHistory:
    """A table's changes, oldest first.

    Attributes:
        catalog: The catalog.
        names: Every `schema.table` name it had, oldest first.
        table_ids: Every id it had, oldest first.
        changes: Its changes.
    """

    catalog: str
    names: list[str]
    table_ids: list[int]
    changes: list[TableChange] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        """JSON: catalog, names, table_ids, changes."""
        return {"catalog": self.catalog, "names": self.names, "table_ids": self.table_ids,
                "changes": [c.document() for c in self.changes]}  # fmt: skip


def begin(
    catalog: str, lineage: Lineage, name: QualifiedName | None, table_id: int | None
) -> tuple[TableHistory, int]:
    """The table's history with no changes yet, and its lineage, from the whole log's lineage.

    Raises:
        ReplayError: No table in the log had that name or id.
    """
    target = lineage.by_name(name) if name is not None else lineage.by_id(table_id or 0)
    if target is None:
        what = f"`{name[0]}.{name[1]}`" if name is not None else f"id {table_id}"
        raise ReplayError(
            f"no table of catalog `{catalog}` ever had {what}: check the name (SCHEMA.TABLE) "
            "or the id, and --catalog"
        )
    history = TableHistory(
        catalog, [f"{s}.{t}" for s, t in lineage.names[target]], list(lineage.ids[target])
    )
    return history, target


def follow(history: TableHistory, events: Iterable[tuple[Event, int | None]]) -> None:
    """Add the table's changes to `history`.

    Args:
        history: The table's history.
        events: In log order, each event with the table's id after it when the event
            changes the table (None: it does not). Every event that wrote a key the
            table's events write must be there (the key-level diffs need the value
            before), and the epoch events (`EpochAssigned`, `StableEpochAdvanced`).
    """
    state: dict[str, KeyValue] = {}
    by_rv: dict[int, TableChange] = {}
    for event, table_id in events:
        intent = event.intent
        if isinstance(intent, EpochAssigned):
            for rv in intent.resource_versions:
                if rv in by_rv:
                    by_rv[rv].schema_epoch = intent.epoch
            continue
        if isinstance(intent, StableEpochAdvanced):
            for change in by_rv.values():
                if change.published_at is None and 0 < change.schema_epoch <= intent.epoch:
                    change.published_at = event.resource_version
            continue
        if not event.is_change:
            continue
        statement = ddl(intent, lambda table: _name_of(state, table))
        keys = mutation_changes(state, event.mutations)
        if table_id is None:
            continue
        version = next((t.version for t in event.tables if t.table_id == table_id), 0)
        change = TableChange(
            event.resource_version, table_id, version, history.names[-1], event.schema_epoch,
            event.resource_version if event.schema_epoch else None, event.actor,
            event.occurred_at, type(intent).__name__, statement, keys,
        )  # fmt: skip
        info = _info(state, table_id)
        if info is not None:
            change.name = f"{info.schema_name}.{info.table_name}"
        history.changes.append(change)
        by_rv[event.resource_version] = change


def _info(state: dict[str, KeyValue], table_id: int) -> TableInfoValue | None:
    key = table_info_key(table_id)
    value = state.get(key) or state.get(removed(key))
    return value if isinstance(value, TableInfoValue) else None


def _name_of(state: dict[str, KeyValue], table_id: int) -> str:
    info = _info(state, table_id)
    return f"table #{table_id}" if info is None else f"{info.schema_name}.{info.table_name}"
