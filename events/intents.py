"""The domain facts an event records, and the control events.

Every intent is an Avro record in the event's `intent` union; its `type` is the
record name. Intents say what happened; the event's mutations say what changed.
"""

from typing import Annotated, Literal

from pydantic import Field

from events.base import Long, Record
from events.values import Column, Label, PartitionDef


class TableCreated(Record):
    """A table was created (GreptimeDB: all its keys in one transaction)."""

    type: Literal["TableCreated"] = "TableCreated"
    table_id: Long
    schema_name: str
    table_name: str


class TableDropped(Record):
    """A table was dropped: info and route moved under `__removed-`."""

    type: Literal["TableDropped"] = "TableDropped"
    table_id: Long
    schema_name: str
    table_name: str


class TableRecovered(Record):
    """A dropped table was brought back under its name; label rules untouched."""

    type: Literal["TableRecovered"] = "TableRecovered"
    table_id: Long
    schema_name: str
    table_name: str


class TablePurged(Record):
    """A dropped table's removed keys and label rules were deleted (GC)."""

    type: Literal["TablePurged"] = "TablePurged"
    table_id: Long


class TableRenamed(Record):
    """A table's name changed."""

    type: Literal["TableRenamed"] = "TableRenamed"
    table_id: Long
    schema_name: str
    old_table_name: str
    new_table_name: str


class TableAltered(Record):
    """A table's columns or options changed."""

    type: Literal["TableAltered"] = "TableAltered"
    table_id: Long
    add_columns: tuple[Column, ...] = ()
    drop_columns: tuple[str, ...] = ()
    set_options: dict[str, str] = Field(default_factory=dict)
    unset_options: tuple[str, ...] = ()


class IdChange(Record):
    """An id replaced by a new one (truncate gives new ids, as TiDB does)."""

    old_id: Long
    new_id: Long


class TableTruncated(Record):
    """A table was truncated: it and its partitions got new ids."""

    type: Literal["TableTruncated"] = "TableTruncated"
    table_id: Long
    new_table_id: Long
    partition_ids: tuple[IdChange, ...] = ()


class PartitionAdded(Record):
    """A partition was added to a table."""

    type: Literal["PartitionAdded"] = "PartitionAdded"
    table_id: Long
    partition: PartitionDef


class PartitionDropped(Record):
    """A partition was dropped; its label rule went with it."""

    type: Literal["PartitionDropped"] = "PartitionDropped"
    table_id: Long
    partition: PartitionDef


class PartitionTruncated(Record):
    """A partition was truncated and got a new id."""

    type: Literal["PartitionTruncated"] = "PartitionTruncated"
    table_id: Long
    partition_name: str
    old_partition_id: Long
    new_partition_id: Long


class PartitionExchanged(Record):
    """A partition and a plain table swapped ids (and label rules)."""

    type: Literal["PartitionExchanged"] = "PartitionExchanged"
    table_id: Long
    partition_name: str
    partition_id: Long
    other_table_id: Long


class RegionFailedOver(Record):
    """A region's leader moved to another datanode."""

    type: Literal["RegionFailedOver"] = "RegionFailedOver"
    table_id: Long
    region_id: Long
    from_datanode: Long
    to_datanode: Long


class AttributesSet(Record):
    """Region labels were set on a table or a partition (TiDB `ATTRIBUTES`)."""

    type: Literal["AttributesSet"] = "AttributesSet"
    rule_id: str
    table_id: Long
    partition_name: str | None = None
    labels: tuple[Label, ...]


class AttributesReset(Record):
    """A table's or a partition's region labels were reset (`ATTRIBUTES=DEFAULT`)."""

    type: Literal["AttributesReset"] = "AttributesReset"
    rule_id: str
    table_id: Long
    partition_name: str | None = None


class Reloaded(Record):
    """Metadata was reloaded: nothing changed but the resource version (Hasura)."""

    type: Literal["Reloaded"] = "Reloaded"


class PublishModeSet(Record):
    """The catalog's publish mode changed (`auto` or `explicit`, WiredTiger)."""

    type: Literal["PublishModeSet"] = "PublishModeSet"
    mode: Literal["auto", "explicit"]


class LeaderElected(Record):
    """A new leader took the catalog; the envelope carries its `leader_epoch`."""

    type: Literal["LeaderElected"] = "LeaderElected"
    leader_id: str


class EpochAssigned(Record):
    """`Publish(table, epoch)`: the table's pending changes got `epoch`."""

    type: Literal["EpochAssigned"] = "EpochAssigned"
    table_id: Long
    epoch: Long
    resource_versions: tuple[Long, ...]


class StableEpochAdvanced(Record):
    """The stable epoch moved up: changes at or below it become visible."""

    type: Literal["StableEpochAdvanced"] = "StableEpochAdvanced"
    epoch: Long


class LeaderResigned(Record):
    """A leader gave the catalog up cleanly; no leader serves it until the next `LeaderElected`.

    Added in schema v2 of the event: nothing changes but the resource version.
    """

    type: Literal["LeaderResigned"] = "LeaderResigned"
    leader_id: str


class CheckpointSigned(Record):
    """The leader signed the log up to the event before this one (schema v3).

    The signed text is the checkpoint note (`events.checkpoint`): the envelope's
    catalog, leader_epoch and occurred_at with `resource_version` and
    `chain_hash` below. Nothing changes but the resource version.
    """

    type: Literal["CheckpointSigned"] = "CheckpointSigned"
    resource_version: Long
    chain_hash: bytes
    key_id: bytes
    signature: bytes


ChangeIntent = (
    TableCreated
    | TableDropped
    | TableRecovered
    | TablePurged
    | TableRenamed
    | TableAltered
    | TableTruncated
    | PartitionAdded
    | PartitionDropped
    | PartitionTruncated
    | PartitionExchanged
    | RegionFailedOver
    | AttributesSet
    | AttributesReset
)
"""Intents of change events: they carry mutations and wait for publication."""

ControlIntent = (
    Reloaded
    | PublishModeSet
    | LeaderElected
    | EpochAssigned
    | StableEpochAdvanced
    | LeaderResigned
    | CheckpointSigned
)
"""Intents of control events: no mutations, visible at once."""

Intent = Annotated[ChangeIntent | ControlIntent, Field(discriminator="type")]
"""Every intent an event can carry."""

CHANGE_INTENTS: tuple[type[Record], ...] = ChangeIntent.__args__
CONTROL_INTENTS: tuple[type[Record], ...] = ControlIntent.__args__
