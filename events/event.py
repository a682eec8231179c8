"""The event: one record of `metalog.events` (DESIGN.md, "An event")."""

from pydantic import AwareDatetime

from events.base import Record
from events.changes import Mutation, Requirement
from events.intents import CHANGE_INTENTS, Intent
from events.values import TableVersion


class Event(Record):
    """One event of a catalog's log: the envelope, the intent and the change.

    `resource_version` is dense per catalog from 1. `schema_epoch` is 0 while a
    change is pending publication. `hash = sha256(prev_hash || canonical body)`
    chains the catalog's events (see `events.chain`).
    """

    event_id: str
    catalog: str
    resource_version: int
    leader_epoch: int
    schema_epoch: int
    command_id: str | None = None
    actor: str
    occurred_at: AwareDatetime
    tables: tuple[TableVersion, ...] = ()
    intent: Intent
    requirements: tuple[Requirement, ...] = ()
    mutations: tuple[Mutation, ...] = ()
    prev_hash: bytes
    hash: bytes

    @property
    def is_change(self) -> bool:
        """Whether this is a change event (mutations, publication gating)."""
        return isinstance(self.intent, CHANGE_INTENTS)

