"""The history a table should have, from the fold: the oracle of the history tests.

Written from the design's words, not from `projector.audit.history*`: every
record is decoded by fastavro (not the compiled readers) and folded
(`projector.fold.apply`); a table's lineage is its creation, then the ids a
truncate or an exchange moves it to; its changes are the change events that
name one of its ids (envelope or intent) or create it; each change's keys are
the fold's head before and after the event, its release the event after which
the fold no longer holds it pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

from fastavro import schemaless_reader

from events.codec import from_avro_dict
from events.event import Event
from events.intents import (
    EpochAssigned,
    PartitionExchanged,
    TableCreated,
    TableRecovered,
    TableRenamed,
    TableTruncated,
)
from events.schema_store import HEADER_LENGTH, default_store
from projector.audit.changes import compare
from projector.audit.ddl import ddl
from projector.fold.apply import apply
from projector.fold.image import Image
from projector.fold.view import View


def fastavro_event(data: bytes) -> Event:
    """The event a record holds, read by fastavro with the current schema as the reader."""
    store = default_store()
    writer = store.by_fingerprint[data[2:HEADER_LENGTH]]
    datum = schemaless_reader(BytesIO(data[HEADER_LENGTH:]), writer.parsed,
                              store.current("event").parsed, return_record_name=True)  # fmt: skip
    event: Event = from_avro_dict("event", datum)
    return event


@dataclass
class _Table:
    ids: list[int]
    names: list[str]
    changes: list[dict[str, Any]] = field(default_factory=list)


_MOVES = {TableTruncated: ("table_id", "new_table_id"),
          PartitionExchanged: ("other_table_id", "partition_id")}  # fmt: skip
"""The intents that move a table to another id: (the field of the id before, after)."""


def _name(view: View, table_id: int) -> str | None:
    info = view.table(table_id) or view.dropped_table(table_id)
    return None if info is None else f"{info.schema_name}.{info.table_name}"


@dataclass
class Histories:
    """Every table's history in a catalog's log (`expected_histories`)."""

    catalog: str
    tables: list[_Table]
    owner: dict[int, _Table]
    holder: dict[str, _Table]

    def of(
        self, name: tuple[str, str] | None = None, table_id: int | None = None
    ) -> dict[str, Any] | None:
        """The history document of the table last named `name`, or last to have `table_id`;
        None when no table had it."""
        if name is not None:
            target = self.holder.get(f"{name[0]}.{name[1]}")
        elif table_id in self.owner:
            target = self.owner[table_id]
        else:
            target = next((t for t in reversed(self.tables) if table_id in t.ids), None)
        if target is None:
            return None
        changes = [{**c, "name": c["name"] or target.names[-1]} for c in target.changes]
        return {"catalog": self.catalog, "names": target.names, "table_ids": target.ids,
                "changes": changes}  # fmt: skip

    def names(self) -> list[tuple[str, str]]:
        """Every name a table took, sorted."""
        return sorted(tuple(n.split(".", 1)) for n in self.holder)  # type: ignore[misc]


def expected_histories(catalog: str, records: list[bytes]) -> Histories:
    """Every table's history, from the records decoded by fastavro and folded."""
    tables: list[_Table] = []
    owner: dict[int, _Table] = {}
    holder: dict[str, _Table] = {}
    by_rv: dict[int, list[dict[str, Any]]] = {}
    pending: list[dict[str, Any]] = []
    image = Image.empty(catalog)
    for event in map(fastavro_event, records):
        before, image = image, apply(image, event)
        intent = event.intent
        named_ids = {t.table_id for t in event.tables} | {getattr(intent, "table_id", None)}
        touched = {id(owner[i]): owner[i] for i in named_ids if i in owner}
        if isinstance(intent, TableCreated):
            new = _Table([intent.table_id], [f"{intent.schema_name}.{intent.table_name}"])
            tables.append(new)
            owner[intent.table_id] = holder[new.names[0]] = touched[id(new)] = new
        moved = _MOVES.get(type(intent))
        if moved is not None and getattr(intent, moved[0]) in owner:
            table = owner.pop(getattr(intent, moved[0]))
            owner[getattr(intent, moved[1])] = table
            table.ids.append(getattr(intent, moved[1]))
        new_name = {TableRenamed: "new_table_name", TableRecovered: "table_name"}.get(type(intent))
        if new_name is not None and intent.table_id in owner:  # type: ignore[union-attr]
            table = owner[intent.table_id]  # type: ignore[union-attr]
            named = f"{intent.schema_name}.{getattr(intent, new_name)}"  # type: ignore[union-attr]
            holder[named] = table
            if table.names[-1] != named:
                table.names.append(named)
        if isinstance(intent, EpochAssigned):
            for rv in intent.resource_versions:
                for change in by_rv.get(rv, ()):
                    change["schema_epoch"] = intent.epoch
        for change in pending:  # released by this event: no longer pending in the fold
            if change["resource_version"] not in image.pending:
                change["published_at"] = event.resource_version
        pending = [c for c in pending if c["published_at"] is None]
        if not event.is_change:
            continue
        for table in touched.values():
            change = _change(event, table.ids[-1], before, image)
            table.changes.append(change)
            by_rv.setdefault(event.resource_version, []).append(change)
            if change["published_at"] is None:
                pending.append(change)
    return Histories(catalog, tables, owner, holder)


def _change(event: Event, current: int, before: Image, after: Image) -> dict[str, Any]:
    """The change of the table whose id is `current` after `event`, as the history shows it."""
    rv = event.resource_version
    return {
        "resource_version": rv, "table_id": current,
        "version": next((t.version for t in event.tables if t.table_id == current), 0),
        "name": _name(after.head, current),  # None: the table's last name
        "schema_epoch": event.schema_epoch,
        "published_at": None if rv in after.pending else rv,
        "actor": event.actor, "occurred_at": event.occurred_at.isoformat(),
        "intent": type(event.intent).__name__,
        "statement": ddl(event.intent, lambda t: _name(before.head, t) or f"table #{t}"),
        "keys": [k.document() for k in _keys(event, before.head, after.head)],
    }  # fmt: skip


def _keys(event: Event, before: View, after: View) -> list[Any]:
    keys = dict.fromkeys(m.key for m in event.mutations)
    found = (compare(key, before.get(key), after.get(key)) for key in keys)
    return [change for change in found if change is not None]
