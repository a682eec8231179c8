"""Builders for the domain tests: deterministic stamps, commands with defaults, lookups."""

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from events.changes import MutationOp
from events.commands import CommandBase, CreateTable, SetPublishMode, TableCommand
from events.event import Event
from events.values import Column, KeyValue
from producers.decide.core import Stamp
from producers.leader.local import LocalCatalog

CATALOG = "c"
SCHEMA = "public"
COLUMNS = (Column(name="id", data_type="bigint"), Column(name="name", data_type="varchar"))
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

C = TypeVar("C", bound=CommandBase)
_command_ids = itertools.count(1)


def stamps() -> Callable[[], Stamp]:
    """A deterministic stamp source: e1, e2, … one second apart."""
    counter = itertools.count(1)

    def next_stamp() -> Stamp:
        n = next(counter)
        return Stamp(event_id=f"e{n}", occurred_at=EPOCH + timedelta(seconds=n))

    return next_stamp


def command(kind: type[C], **fields: Any) -> C:
    """A command with a fresh command_id, the test catalog and actor, schema `public`."""
    fields.setdefault("command_id", f"cmd-{next(_command_ids)}")
    fields.setdefault("catalog", CATALOG)
    fields.setdefault("actor", "tester")
    if issubclass(kind, TableCommand):
        fields.setdefault("schema_name", SCHEMA)
    return kind(**fields)


def create(table: str = "orders", **fields: Any) -> CreateTable:
    """CreateTable with two columns, one region on datanode 1 unless told."""
    fields.setdefault("columns", COLUMNS)
    return command(CreateTable, table_name=table, **fields)


def local(mode: str = "auto") -> LocalCatalog:
    """A fresh in-memory catalog, switched to `mode`."""
    catalog = LocalCatalog(CATALOG, stamps())
    if mode != "auto":
        catalog.submit(command(SetPublishMode, mode=mode))
    return catalog


def writes(event: Event) -> dict[str, KeyValue | None]:
    """The event's mutations as key → PUT value (None for DELETE)."""
    return {m.key: m.value for m in event.mutations}


def deleted(event: Event) -> set[str]:
    """The keys the event deletes."""
    return {m.key for m in event.mutations if m.op is MutationOp.DELETE}


def last(catalog: LocalCatalog) -> Event:
    """The catalog's newest event."""
    return catalog.events[-1]
