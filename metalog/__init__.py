"""metalog's public API, one import home: ``from metalog import MetadataClient, Follower``.

The names live in their packages (`producers`, `projector`, `events`, …) and are
imported on first use (PEP 562 ``__getattr__``), so ``import metalog`` (and the
command line, ``metalog.cli``) loads neither Kafka nor Spark until a name asks for it.

Exports: the client and the leader (`MetadataClient`, `Leader`, `LeaderOptions`), the
read side (`Follower`, `Image`, `WatchEvent`), the command helpers (`Column`, `Topics`,
`Committed` and every command type of `events.commands`), the security settings
(`KafkaSecurity`, `load_credentials`), and the errors: `MetalogError`
and its families (`CommandRejected` and each rejection, `ClusterUnavailable`, `LeaderUnavailable`,
`CommandOutcomeUnknown`, `FollowerError`, `ApplyError`, `DecodeError`, `SqlError`, …).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the one list of exported names: mypy reads it, `_homes` too
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
    from events.errors import (
        ChainBroken,
        DecodeError,
        EncodeError,
        MetalogError,
        UnknownCodec,
        UnknownSchema,
    )
    from events.replies import Committed
    from events.topics import Topics
    from events.values import Column
    from metalog.errors import StackError
    from producers.client.client import MetadataClient
    from producers.errors import (
        ChangesPending,
        ColumnExists,
        ColumnNotFound,
        CommandOutcomeUnknown,
        CommandRejected,
        EpochNotAboveStable,
        EpochRegression,
        Fenced,
        InternalError,
        InvalidAttributes,
        InvalidCommand,
        InvalidName,
        LeaderUnavailable,
        NameTaken,
        NoAttributes,
        NotDropped,
        NothingToPublish,
        NotLeader,
        OutOfRange,
        PartitionExists,
        PartitionNotFound,
        PoisonCommand,
        PublishOutOfOrder,
        RecordRefused,
        RegionNotFound,
        RouteChanged,
        TableNotFound,
        TooLarge,
        TransactionFailed,
        VersionConflict,
        WrongPublishMode,
    )
    from producers.leader.leader import Leader
    from producers.leader.owner import LeaderOptions
    from producers.sql.engine import QueryError
    from producers.sql.errors import SqlError, SqlSyntaxError, UnsupportedStatement
    from projector.errors import (
        AccessDenied,
        ApplyError,
        ClusterUnavailable,
        CredentialsError,
        DivergedAt,
        Divergence,
        EpochOutOfOrder,
        FollowerError,
        FollowerStopped,
        ResourceVersionTooOld,
        SequenceGap,
        SnapshotError,
        StaleLeader,
        TopicError,
        WaitTimeout,
    )
    from projector.fold.image import Image
    from projector.follower.follower import Follower
    from projector.follower.watch import WatchEvent
    from projector.kafka.security import KafkaSecurity, load_credentials
    from streaming.errors import JarsError, ProjectionError


def _homes() -> dict[str, str]:
    """Each exported name's module, read from the imports under ``TYPE_CHECKING`` above."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    [block] = [node for node in tree.body if isinstance(node, ast.If)]
    return {alias.asname or alias.name: node.module for node in block.body
            if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names}  # fmt: skip


_MODULE_OF = _homes()

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
