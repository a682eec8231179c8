"""The outcome of a command, sent on `metalog.replies` keyed by the client id."""

from typing import Annotated, Literal

from pydantic import Field

from events.base import Long, Record
from events.values import TableVersion


class Committed(Record):
    """The command's change was appended at `resource_version`."""

    type: Literal["Committed"] = "Committed"
    command_id: str
    catalog: str
    resource_version: Long
    tables: tuple[TableVersion, ...] = ()
    schema_epoch: Long


class Rejected(Record):
    """The command was refused; nothing was written.

    `code` names the typed error (`VersionConflict`, `NameTaken`, …); the
    current values let the caller re-read and retry (Hasura's 409).
    """

    type: Literal["Rejected"] = "Rejected"
    command_id: str
    catalog: str
    code: str
    message: str
    current_version: Long | None = None
    current_resource_version: Long | None = None


Reply = Annotated[Committed | Rejected, Field(discriminator="type")]
"""Every reply a client can get."""
