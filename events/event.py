"""The event: one record of `metalog.events` (DESIGN.md, "An event")."""

from pydantic import AwareDatetime

from events.base import Long, Record
from events.changes import Mutation, Requirement
from events.intents import CHANGE_INTENTS, Intent
from events.values import TableVersion

GENESIS_HASH = bytes(32)
"""The `prev_hash` of a catalog's first event (see `events.chain`)."""


class Event(Record):
    """One event of a catalog's log: the envelope, the intent and the change.

    `resource_version` is dense per catalog from 1. `schema_epoch` is 0 while a
    change is pending publication. `hash = sha256(prev_hash || canonical body)`
    chains the catalog's events (see `events.chain`). `trace_id` (schema v2)
    is the tracing id of the command that caused the event, if any.
    """

    event_id: str
    catalog: str
    resource_version: Long
    leader_epoch: Long
    schema_epoch: Long
    command_id: str | None = None
    actor: str
    occurred_at: AwareDatetime
    tables: tuple[TableVersion, ...] = ()
    intent: Intent
    requirements: tuple[Requirement, ...] = ()
    mutations: tuple[Mutation, ...] = ()
    prev_hash: bytes
    hash: bytes
    trace_id: str | None = None

    @property
    def is_change(self) -> bool:
        """Whether this is a change event (mutations, publication gating)."""
        return isinstance(self.intent, CHANGE_INTENTS)
