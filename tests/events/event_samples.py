"""Fixed sample records of every event intent, command and reply (golden-bytes inputs)."""

from datetime import UTC, datetime
from typing import Any

from events.changes import KeyAbsent, KeyAtVersion, KeyPresent, Mutation, MutationOp, ValueEquals
from events.commands import (
    AddPartition,
    AdvanceStableEpoch,
    AlterTable,
    CreateTable,
    DropPartition,
    DropTable,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    Reload,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    SetPublishMode,
    TruncatePartition,
    TruncateTable,
)
from events.event import Event
from events.intents import (
    AttributesReset,
    AttributesSet,
    CheckpointSigned,
    EpochAssigned,
    IdChange,
    LeaderElected,
    LeaderResigned,
    PartitionAdded,
    PartitionDropped,
    PartitionExchanged,
    PartitionTruncated,
    PublishModeSet,
    RegionFailedOver,
    Reloaded,
    StableEpochAdvanced,
    TableAltered,
    TableCreated,
    TableDropped,
    TablePurged,
    TableRecovered,
    TableRenamed,
    TableTruncated,
)
from events.replies import Committed, Rejected
from events.values import (
    Column,
    DatanodeTableValue,
    KeyRange,
    Label,
    LabelRuleValue,
    PartitionDef,
    RegionRoute,
    TableInfoValue,
    TableNameValue,
    TableRouteValue,
    TableVersion,
)

AT = datetime(2024, 5, 1, 12, 30, 45, 123456, tzinfo=UTC)
COLUMNS = (
    Column(name="id", data_type="BIGINT", nullable=False),
    Column(name="v", data_type="TEXT"),
)
PART = PartitionDef(partition_id=1001, name="p0")
LABELS = (Label(key="zone", value="east"),)
ROUTE = TableRouteValue(
    table_id=42,
    region_routes=(RegionRoute(region_id=1, leader_datanode=1, follower_datanodes=(2,)),),
)
INFO = TableInfoValue(
    table_id=42,
    catalog="greptime",
    schema_name="public",
    table_name="orders",
    columns=COLUMNS,
    primary_key=("id",),
    options={"ttl": "7d"},
    partitions=(PART,),
    version=2,
)
VALUES = (
    INFO,
    TableNameValue(table_id=42),
    ROUTE,
    DatanodeTableValue(datanode_id=1, table_id=42, regions=(1,), version=2),
    LabelRuleValue(
        rule_id="schema/public/orders",
        labels=LABELS,
        ranges=(KeyRange(start_key="74", end_key="75"),),
    ),
)
INTENTS: tuple[Any, ...] = (
    TableCreated(table_id=42, schema_name="public", table_name="orders"),
    TableDropped(table_id=42, schema_name="public", table_name="orders"),
    TableRecovered(table_id=42, schema_name="public", table_name="orders"),
    TablePurged(table_id=42),
    TableRenamed(table_id=42, schema_name="public", old_table_name="o", new_table_name="orders"),
    TableAltered(
        table_id=42,
        add_columns=COLUMNS[1:],
        drop_columns=("x",),
        set_options={"a": "1"},
        unset_options=("b",),
    ),
    TableTruncated(
        table_id=42, new_table_id=43, partition_ids=(IdChange(old_id=1001, new_id=1002),)
    ),
    PartitionAdded(table_id=42, partition=PART),
    PartitionDropped(table_id=42, partition=PART),
    PartitionTruncated(
        table_id=42, partition_name="p0", old_partition_id=1001, new_partition_id=1003
    ),
    PartitionExchanged(table_id=42, partition_name="p0", partition_id=1001, other_table_id=50),
    RegionFailedOver(table_id=42, region_id=1, from_datanode=1, to_datanode=2),
    AttributesSet(
        rule_id="schema/public/orders/p0", table_id=42, partition_name="p0", labels=LABELS
    ),
    AttributesReset(rule_id="schema/public/orders", table_id=42),
    Reloaded(),
    PublishModeSet(mode="explicit"),
    LeaderElected(leader_id="node-1"),
    EpochAssigned(table_id=42, epoch=3, resource_versions=(5, 6)),
    StableEpochAdvanced(epoch=3),
    LeaderResigned(leader_id="node-1"),
    CheckpointSigned(
        resource_version=6, chain_hash=bytes(range(32)), key_id=b"\x01\x02\x03\x04",
        signature=b"\x07" * 64,
    ),
)


def sample_event(intent: Any, resource_version: int = 7, prev_hash: bytes = bytes(32)) -> Event:
    """An event carrying `intent`, with every envelope part filled for change intents."""
    change = not isinstance(
        intent,
        Reloaded
        | PublishModeSet
        | LeaderElected
        | EpochAssigned
        | StableEpochAdvanced
        | LeaderResigned
        | CheckpointSigned,
    )
    return Event(
        event_id=f"ev-{resource_version}",
        catalog="greptime",
        resource_version=resource_version,
        leader_epoch=2,
        schema_epoch=0,
        command_id="cmd-1" if change else None,
        actor="svc",
        occurred_at=AT,
        tables=(TableVersion(table_id=42, version=2),) if change else (),
        intent=intent,
        requirements=(
            (
                KeyAbsent(key="a"),
                KeyPresent(key="b"),
                KeyAtVersion(key="c", version=1),
                ValueEquals(key="d", value=ROUTE),
            )
            if change
            else ()
        ),
        mutations=(
            (
                *(Mutation(key=f"k{i}", op=MutationOp.PUT, value=v) for i, v in enumerate(VALUES)),
                Mutation(key="gone", op=MutationOp.DELETE),
            )
            if change
            else ()
        ),
        prev_hash=prev_hash,
        hash=b"\x01" * 32,
    )


EVENTS = {intent.type: sample_event(intent) for intent in INTENTS}
BASE: dict[str, Any] = {"command_id": "cmd-1", "catalog": "greptime", "actor": "svc"}
TBL: dict[str, Any] = {**BASE, "schema_name": "public", "table_name": "orders"}
COMMANDS: dict[str, Any] = {
    c.type: c
    for c in (
        CreateTable(
            **TBL,
            columns=COLUMNS,
            primary_key=("id",),
            options={"ttl": "7d"},
            partitions=("p0",),
            regions=2,
            datanodes=(1, 2),
            reply_to="client-1",
        ),
        DropTable(**TBL, expected_version=3),
        RecoverTable(**TBL, table_id=42),
        PurgeTable(**BASE, table_id=42),
        RenameTable(**TBL, new_table_name="orders2", expected_resource_version=9),
        AlterTable(
            **TBL,
            add_columns=COLUMNS[1:],
            drop_columns=("x",),
            set_options={"a": "1"},
            unset_options=("b",),
        ),
        TruncateTable(**TBL),
        AddPartition(**TBL, partition_name="p1"),
        DropPartition(**TBL, partition_name="p0"),
        TruncatePartition(**TBL, partition_name="p0"),
        ExchangePartition(
            **TBL,
            partition_name="p0",
            other_schema_name="public",
            other_table_name="plain",
            other_expected_version=1,
        ),
        FailoverRegion(**BASE, table_id=42, region_id=1, to_datanode=2, expected_route=ROUTE),
        SetAttributes(**TBL, partition_name="p0", attributes="zone=east"),
        ResetAttributes(**TBL),
        Publish(**BASE, table_id=42, epoch=3),
        AdvanceStableEpoch(**BASE, epoch=3),
        SetPublishMode(**BASE, mode="auto"),
        Reload(**BASE),
    )
}
REPLIES: dict[str, Any] = {
    "Committed": Committed(
        command_id="cmd-1",
        catalog="greptime",
        resource_version=7,
        tables=(TableVersion(table_id=42, version=2),),
        schema_epoch=0,
    ),
    "Rejected": Rejected(
        command_id="cmd-1",
        catalog="greptime",
        code="VersionConflict",
        message="table `public.orders` is at version 7, not 6: re-read it and retry",
        current_version=7,
        current_resource_version=12,
    ),
}
