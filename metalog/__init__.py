"""metalog's public API, one import home: ``from metalog import MetadataClient, Follower``.

The names live in their packages (`producers`, `projector`, `events`, …) and are
imported on first use (PEP 562 ``__getattr__``), so ``import metalog`` (and the
command line, ``metalog.cli``) loads neither Kafka nor Spark until a name asks for it.

Exports: the client and the leader (`MetadataClient`, `Leader`, `LeaderOptions`), the
read side (`Follower`, `Image`, `WatchEvent`), the command helpers (`Column`, `Topics`,
`Committed` and every command type of `events.commands`), the security settings
(`KafkaSecurity`, `load_credentials`), and the errors: `MetalogError`
and its families (`CommandRejected` and each rejection, `LeaderUnavailable`,
`CommandOutcomeUnknown`, `FollowerError`, `ApplyError`, `DecodeError`, `SqlError`, …).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `X as X`: mypy's explicit re-export
    from events.commands import (
        AddPartition as AddPartition,
    )
    from events.commands import (
        AdvanceStableEpoch as AdvanceStableEpoch,
    )
    from events.commands import (
        AlterTable as AlterTable,
    )
    from events.commands import (
        CreateTable as CreateTable,
    )
    from events.commands import (
        DropPartition as DropPartition,
    )
    from events.commands import (
        DropTable as DropTable,
    )
    from events.commands import (
        ExchangePartition as ExchangePartition,
    )
    from events.commands import (
        FailoverRegion as FailoverRegion,
    )
    from events.commands import (
        Publish as Publish,
    )
    from events.commands import (
        PurgeTable as PurgeTable,
    )
    from events.commands import (
        RecoverTable as RecoverTable,
    )
    from events.commands import (
        Reload as Reload,
    )
    from events.commands import (
        RenameTable as RenameTable,
    )
    from events.commands import (
        ResetAttributes as ResetAttributes,
    )
    from events.commands import (
        SetAttributes as SetAttributes,
    )
    from events.commands import (
        SetPublishMode as SetPublishMode,
    )
    from events.commands import (
        TruncatePartition as TruncatePartition,
    )
    from events.commands import (
        TruncateTable as TruncateTable,
    )
    from events.errors import (
        ChainBroken as ChainBroken,
    )
    from events.errors import (
        DecodeError as DecodeError,
    )
    from events.errors import (
        EncodeError as EncodeError,
    )
    from events.errors import (
        MetalogError as MetalogError,
    )
    from events.errors import (
        UnknownCodec as UnknownCodec,
    )
    from events.errors import (
        UnknownSchema as UnknownSchema,
    )
    from events.replies import (
        Committed as Committed,
    )
    from events.topics import (
        Topics as Topics,
    )
    from events.values import (
        Column as Column,
    )
    from metalog.errors import (
        StackError as StackError,
    )
    from producers.client.client import (
        MetadataClient as MetadataClient,
    )
    from producers.errors import (
        ChangesPending as ChangesPending,
    )
    from producers.errors import (
        ColumnExists as ColumnExists,
    )
    from producers.errors import (
        ColumnNotFound as ColumnNotFound,
    )
    from producers.errors import (
        CommandOutcomeUnknown as CommandOutcomeUnknown,
    )
    from producers.errors import (
        CommandRejected as CommandRejected,
    )
    from producers.errors import (
        EpochNotAboveStable as EpochNotAboveStable,
    )
    from producers.errors import (
        EpochRegression as EpochRegression,
    )
    from producers.errors import (
        Fenced as Fenced,
    )
    from producers.errors import (
        InternalError as InternalError,
    )
    from producers.errors import (
        InvalidAttributes as InvalidAttributes,
    )
    from producers.errors import (
        InvalidCommand as InvalidCommand,
    )
    from producers.errors import (
        InvalidName as InvalidName,
    )
    from producers.errors import (
        LeaderUnavailable as LeaderUnavailable,
    )
    from producers.errors import (
        NameTaken as NameTaken,
    )
    from producers.errors import (
        NoAttributes as NoAttributes,
    )
    from producers.errors import (
        NotDropped as NotDropped,
    )
    from producers.errors import (
        NothingToPublish as NothingToPublish,
    )
    from producers.errors import (
        NotLeader as NotLeader,
    )
    from producers.errors import (
        OutOfRange as OutOfRange,
    )
    from producers.errors import (
        PartitionExists as PartitionExists,
    )
    from producers.errors import (
        PartitionNotFound as PartitionNotFound,
    )
    from producers.errors import (
        PoisonCommand as PoisonCommand,
    )
    from producers.errors import (
        PublishOutOfOrder as PublishOutOfOrder,
    )
    from producers.errors import (
        RecordRefused as RecordRefused,
    )
    from producers.errors import (
        RegionNotFound as RegionNotFound,
    )
    from producers.errors import (
        RouteChanged as RouteChanged,
    )
    from producers.errors import (
        TableNotFound as TableNotFound,
    )
    from producers.errors import (
        TooLarge as TooLarge,
    )
    from producers.errors import (
        TransactionFailed as TransactionFailed,
    )
    from producers.errors import (
        VersionConflict as VersionConflict,
    )
    from producers.errors import (
        WrongPublishMode as WrongPublishMode,
    )
    from producers.leader.leader import (
        Leader as Leader,
    )
    from producers.leader.owner import (
        LeaderOptions as LeaderOptions,
    )
    from producers.sql.engine import (
        QueryError as QueryError,
    )
    from producers.sql.errors import (
        SqlError as SqlError,
    )
    from producers.sql.errors import (
        SqlSyntaxError as SqlSyntaxError,
    )
    from producers.sql.errors import (
        UnsupportedStatement as UnsupportedStatement,
    )
    from projector.errors import (
        AccessDenied as AccessDenied,
    )
    from projector.errors import (
        ApplyError as ApplyError,
    )
    from projector.errors import (
        ClusterUnavailable as ClusterUnavailable,
    )
    from projector.errors import (
        CredentialsError as CredentialsError,
    )
    from projector.errors import (
        DivergedAt as DivergedAt,
    )
    from projector.errors import (
        Divergence as Divergence,
    )
    from projector.errors import (
        EpochOutOfOrder as EpochOutOfOrder,
    )
    from projector.errors import (
        FollowerError as FollowerError,
    )
    from projector.errors import (
        FollowerStopped as FollowerStopped,
    )
    from projector.errors import (
        ResourceVersionTooOld as ResourceVersionTooOld,
    )
    from projector.errors import (
        SequenceGap as SequenceGap,
    )
    from projector.errors import (
        SnapshotError as SnapshotError,
    )
    from projector.errors import (
        StaleLeader as StaleLeader,
    )
    from projector.errors import (
        TopicError as TopicError,
    )
    from projector.errors import (
        WaitTimeout as WaitTimeout,
    )
    from projector.fold.image import (
        Image as Image,
    )
    from projector.follower.follower import (
        Follower as Follower,
    )
    from projector.follower.watch import (
        WatchEvent as WatchEvent,
    )
    from projector.kafka.security import (
        KafkaSecurity as KafkaSecurity,
    )
    from projector.kafka.security import (
        load_credentials as load_credentials,
    )
    from streaming.errors import (
        JarsError as JarsError,
    )
    from streaming.errors import (
        ProjectionError as ProjectionError,
    )

_HOMES: dict[str, str] = {
    "producers.client.client": "MetadataClient",
    "producers.leader.leader": "Leader",
    "producers.leader.owner": "LeaderOptions",
    "projector.follower.follower": "Follower",
    "projector.follower.watch": "WatchEvent",
    "projector.fold.image": "Image",
    "projector.kafka.security": "KafkaSecurity load_credentials",
    "events.topics": "Topics",
    "events.replies": "Committed",
    "events.values": "Column",
    "events.commands": (
        "AddPartition AdvanceStableEpoch AlterTable CreateTable DropPartition DropTable "
        "ExchangePartition FailoverRegion Publish PurgeTable RecoverTable Reload RenameTable "
        "ResetAttributes SetAttributes SetPublishMode TruncatePartition TruncateTable"
    ),
    "events.errors": "ChainBroken DecodeError EncodeError MetalogError UnknownCodec UnknownSchema",
    "producers.errors": (
        "ChangesPending ColumnExists ColumnNotFound CommandOutcomeUnknown CommandRejected "
        "EpochNotAboveStable EpochRegression Fenced InternalError InvalidAttributes "
        "InvalidCommand InvalidName LeaderUnavailable NameTaken NoAttributes NotLeader "
        "NotDropped NothingToPublish OutOfRange PartitionExists PartitionNotFound "
        "PoisonCommand PublishOutOfOrder RecordRefused RegionNotFound RouteChanged "
        "TableNotFound TooLarge TransactionFailed VersionConflict WrongPublishMode"
    ),
    "projector.errors": (
        "AccessDenied ApplyError ClusterUnavailable CredentialsError DivergedAt Divergence "
        "EpochOutOfOrder "
        "FollowerError FollowerStopped "
        "ResourceVersionTooOld SequenceGap SnapshotError StaleLeader TopicError WaitTimeout"
    ),
    "producers.sql.errors": "SqlError SqlSyntaxError UnsupportedStatement",
    "producers.sql.engine": "QueryError",
    "streaming.errors": "JarsError ProjectionError",
    "metalog.errors": "StackError",
}  # fmt: skip
"""Each exported name's module: the one place a name is added (and above, for mypy)."""

_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names.split()}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """Import an exported name's module on first use (PEP 562); cache the name here."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'metalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names with the exports not imported yet (for completion in a shell)."""
    return sorted({*globals(), *__all__})
