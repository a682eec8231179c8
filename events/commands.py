"""Commands services send to a catalog's leader (DESIGN.md's command table).

Every command names its catalog and carries `command_id` (dedupe key: a retry
with the same id is applied at most once), `actor`, the optional optimistic
checks `expected_version` (per table) and `expected_resource_version` (per
catalog), and `reply_to` (the client id replies are keyed by).
"""

from typing import Annotated, Literal

from pydantic import Field

from events.base import Long, Record
from events.values import Column, TableRouteValue


class CommandBase(Record):
    """The fields every command carries."""

    command_id: str
    catalog: str
    actor: str
    expected_version: Long | None = None
    expected_resource_version: Long | None = None
    reply_to: str | None = None


class TableCommand(CommandBase):
    """A command addressed to a table by name."""

    schema_name: str
    table_name: str


class CreateTable(TableCommand):
    """Create a table with its regions placed on `datanodes` (round robin)."""

    type: Literal["CreateTable"] = "CreateTable"
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    options: dict[str, str] = Field(default_factory=dict)
    partitions: tuple[str, ...] = ()
    regions: Long = 1
    datanodes: tuple[Long, ...] = (1,)


class DropTable(TableCommand):
    """Drop a table: info and route move under `__removed-`."""

    type: Literal["DropTable"] = "DropTable"


class RecoverTable(TableCommand):
    """Bring back a dropped table (the newest dropped one of that name, or `table_id`)."""

    type: Literal["RecoverTable"] = "RecoverTable"
    table_id: Long | None = None


class PurgeTable(CommandBase):
    """Delete a dropped table's removed keys and label rules (GC)."""

    type: Literal["PurgeTable"] = "PurgeTable"
    table_id: Long


class RenameTable(TableCommand):
    """Rename a table within its schema."""

    type: Literal["RenameTable"] = "RenameTable"
    new_table_name: str


class AlterTable(TableCommand):
    """Change a table's columns or options."""

    type: Literal["AlterTable"] = "AlterTable"
    add_columns: tuple[Column, ...] = ()
    drop_columns: tuple[str, ...] = ()
    set_options: dict[str, str] = Field(default_factory=dict)
    unset_options: tuple[str, ...] = ()


class TruncateTable(TableCommand):
    """Truncate a table: new table and partition ids; label ranges follow."""

    type: Literal["TruncateTable"] = "TruncateTable"


class AddPartition(TableCommand):
    """Add a partition to a table."""

    type: Literal["AddPartition"] = "AddPartition"
    partition_name: str


class DropPartition(TableCommand):
    """Drop a partition; its label rule goes at once."""

    type: Literal["DropPartition"] = "DropPartition"
    partition_name: str


class TruncatePartition(TableCommand):
    """Truncate a partition: a new partition id; its label range follows."""

    type: Literal["TruncatePartition"] = "TruncatePartition"
    partition_name: str


class ExchangePartition(TableCommand):
    """Swap a partition with a plain table (ids and label rules swap)."""

    type: Literal["ExchangePartition"] = "ExchangePartition"
    partition_name: str
    other_schema_name: str
    other_table_name: str
    other_expected_version: Long | None = None


class FailoverRegion(CommandBase):
    """Move a region's leader to another datanode if the route still equals the snapshot."""

    type: Literal["FailoverRegion"] = "FailoverRegion"
    table_id: Long
    region_id: Long
    to_datanode: Long
    expected_route: TableRouteValue


class SetAttributes(TableCommand):
    """`ALTER TABLE t [PARTITION p] ATTRIBUTES='k=v[,k1=v1…]'` (TiDB)."""

    type: Literal["SetAttributes"] = "SetAttributes"
    partition_name: str | None = None
    attributes: str


class ResetAttributes(TableCommand):
    """`ALTER TABLE t [PARTITION p] ATTRIBUTES=DEFAULT` (TiDB)."""

    type: Literal["ResetAttributes"] = "ResetAttributes"
    partition_name: str | None = None


class Publish(CommandBase):
    """Publish a table's pending changes at `epoch` (WiredTiger `publish`).

    The changes take `epoch` in log order up to the first one that must wait
    for an earlier change of another table (DESIGN.md, "Publication order").
    """

    type: Literal["Publish"] = "Publish"
    table_id: Long
    epoch: Long


class AdvanceStableEpoch(CommandBase):
    """Release every change published at or below `epoch` to followers."""

    type: Literal["AdvanceStableEpoch"] = "AdvanceStableEpoch"
    epoch: Long


class SetPublishMode(CommandBase):
    """Switch the catalog between `auto` (default) and `explicit` publication."""

    type: Literal["SetPublishMode"] = "SetPublishMode"
    mode: Literal["auto", "explicit"]


class Reload(CommandBase):
    """Reload metadata: bumps the resource version only (Hasura)."""

    type: Literal["Reload"] = "Reload"


Command = Annotated[
    CreateTable
    | DropTable
    | RecoverTable
    | PurgeTable
    | RenameTable
    | AlterTable
    | TruncateTable
    | AddPartition
    | DropPartition
    | TruncatePartition
    | ExchangePartition
    | FailoverRegion
    | SetAttributes
    | ResetAttributes
    | Publish
    | AdvanceStableEpoch
    | SetPublishMode
    | Reload,
    Field(discriminator="type"),
]
"""Every command a leader serves."""
