"""What a change event checks (requirements) and what it writes (mutations).

Requirements are data, like an Iceberg commit's: the leader records the
compare conditions it checked, and every follower checks them again.
Mutations are the after-image of every key the command changed, so applying a
change needs no domain logic.
"""

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, model_validator

from events.base import Long, Record
from events.values import KeyValue


class KeyAbsent(Record):
    """The key holds no value."""

    type: Literal["KeyAbsent"] = "KeyAbsent"
    key: str


class KeyPresent(Record):
    """The key holds a value."""

    type: Literal["KeyPresent"] = "KeyPresent"
    key: str


class KeyAtVersion(Record):
    """The versioned value under the key (table info, datanode table) is at `version`."""

    type: Literal["KeyAtVersion"] = "KeyAtVersion"
    key: str
    version: Long


class ValueEquals(Record):
    """The key holds exactly `value` (a snapshot the caller took, e.g. a route)."""

    type: Literal["ValueEquals"] = "ValueEquals"
    key: str
    value: KeyValue


Requirement = Annotated[
    KeyAbsent | KeyPresent | KeyAtVersion | ValueEquals, Field(discriminator="type")
]
"""One compare condition checked before a change is written."""


class MutationOp(StrEnum):
    """What a mutation does to its key."""

    PUT = "PUT"
    DELETE = "DELETE"


class Mutation(Record):
    """The after-image of one key: PUT with its new value, or DELETE (value None)."""

    key: str
    op: MutationOp
    value: KeyValue | None = None

    @model_validator(mode="after")
    def _value_matches_op(self) -> "Mutation":
        if (self.op is MutationOp.PUT) != (self.value is not None):
            raise ValueError(f"mutation of {self.key!r}: PUT needs a value, DELETE takes none")
        return self
