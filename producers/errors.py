"""Why a command is rejected: one typed error per rule, carried by `Rejected`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from events.errors import MetalogError
from projector.errors import ClusterUnavailable

if TYPE_CHECKING:
    from events.replies import Rejected


class CommandRejected(MetalogError):
    """A command was refused and nothing was written.

    `code` is the class name; it travels in the `Rejected` reply so the client
    raises the same type. Conflicts keep the current value.
    """

    def __init__(
        self,
        message: str,
        *,
        current_version: int | None = None,
        current_resource_version: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.current_version = current_version
        self.current_resource_version = current_resource_version

    @property
    def code(self) -> str:
        """The name the reply carries."""
        return type(self).__name__


class InvalidAttributes(CommandRejected):
    """A TiDB attribute string (`k=v[,k1=v1…]`) is malformed."""


# -- the write path on Kafka: not rejections, nothing was decided --------------


class LeaderUnavailable(ClusterUnavailable):
    """The commands cannot reach a leader (topics missing, cluster down)."""


class CommandOutcomeUnknown(MetalogError):
    """No reply came in time: the command may or may not have been applied."""

    def __init__(self, command_id: str) -> None:
        self.command_id = command_id
        super().__init__(
            f"no outcome for command `{command_id}` in time: retry with the same "
            "command_id (a retry is applied at most once and returns the first outcome)"
        )


class NotLeader(MetalogError):
    """An in-process submit reached a process that does not own the catalog."""

    def __init__(self, catalog: str, partition: int) -> None:
        self.catalog = catalog
        self.partition = partition
        super().__init__(
            f"this process does not lead catalog `{catalog}` (partition {partition}): "
            "send the command with MetadataClient, which reaches the leader"
        )


class Fenced(MetalogError):
    """A newer owner of the partition fenced this leader: it must hand the partition back."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        super().__init__(
            f"the leader of partition {partition} was fenced by a newer owner: "
            "nothing it wrote since is visible; this process hands the partition back"
        )


class MembershipLost(MetalogError):
    """The leader's consumer of the commands topic failed for good; the leader joins again."""

    def __init__(self, group: str, reason: str) -> None:
        super().__init__(
            f"the leader's membership of the group {group} ended ({reason}): it joins again "
            "with a new consumer; if another process uses the same --instance-id, give each "
            "its own"
        )


class TransactionFailed(MetalogError):
    """A batch's transaction did not commit; state is rebuilt from the log."""


class RecordRefused(TransactionFailed):
    """The producer or the broker refused a record of the batch for good (too large, invalid).

    Committing the batch again would fail again: the leader serves its
    commands one per transaction to find the command whose record it is, and
    refuses that command alone (`too_large`: with `TooLarge`).
    """

    def __init__(self, message: str, *, too_large: bool) -> None:
        super().__init__(message)
        self.too_large = too_large


class PoisonCommand(CommandRejected):
    """The leader could not read the command (undecodable, unknown type, too large)."""


def rejection_from_reply(reply: Rejected) -> CommandRejected:
    """The typed error a `Rejected` reply stands for, raised again on the client side."""
    kinds: dict[str, type[CommandRejected]] = {}
    pending: list[type[CommandRejected]] = [CommandRejected]
    while pending:
        kind = pending.pop()
        kinds[kind.__name__] = kind
        pending.extend(kind.__subclasses__())
    kind = kinds.get(reply.code, CommandRejected)
    # Bypass subclass constructors: the reply already holds the final message.
    error = kind.__new__(kind)
    CommandRejected.__init__(
        error,
        reply.message,
        current_version=reply.current_version,
        current_resource_version=reply.current_resource_version,
    )
    return error


# -- the domain rules (producers.decide.rules): one class per rule, named in the reply ---


class InvalidCommand(CommandRejected):
    """The command is malformed on its own (no datanodes, a duplicate partition name…)."""


class InvalidName(InvalidCommand):
    """A catalog, schema, table, partition or column name breaks the naming rule.

    Names are 1-64 characters, with no `/` (it separates key segments) and no
    control characters (DESIGN.md, "Names, values and sizes").
    """


class OutOfRange(InvalidCommand):
    """A number (id, epoch, version, count) is outside its documented range."""


class TooLarge(InvalidCommand):
    """The command's event would not fit the events topic's record limit."""


class InternalError(CommandRejected):
    """Deciding or encoding the command failed unexpectedly; nothing was written.

    The message carries the exception's type and text. The leader goes on
    serving; report it, since a command should be either applied or refused
    by a rule.
    """


class VersionConflict(CommandRejected):
    """The caller's `expected_version` or `expected_resource_version` is stale (Hasura's 409).

    `current_version` / `current_resource_version` carry the value to re-read from.
    """

    @classmethod
    def of_table(
        cls, name: str, expected: int, current: int, table_id: int | None = None
    ) -> VersionConflict:
        """A table is not at the version the caller read (`table_id`: the id the name has now).

        A name's versions go on across the ids it points to, so a version read
        for the name before a truncate, exchange or re-create never matches.
        """
        held = "" if table_id is None else f" (table id {table_id})"
        return cls(
            f"table `{name}` is at version {current}, not {expected}{held}: re-read it and retry",
            current_version=current,
        )

    @classmethod
    def of_catalog(cls, catalog: str, expected: int, current: int) -> VersionConflict:
        """The catalog moved past the resource_version the caller read."""
        return cls(
            f"catalog `{catalog}` is at resource_version {current}, not {expected}: "
            "re-read the metadata and retry",
            current_resource_version=current,
        )


class NameTaken(CommandRejected):
    """A live table already has the name."""


class TableNotFound(CommandRejected):
    """No live (or, for purge/recover, dropped) table matches."""


class NotDropped(CommandRejected):
    """Purge of a table that is live, not dropped: drop it first."""


class PartitionNotFound(CommandRejected):
    """The table has no partition of that name."""


class PartitionExists(CommandRejected):
    """The table already has a partition of that name."""


class ColumnExists(CommandRejected):
    """An added column's name is taken."""


class ColumnNotFound(CommandRejected):
    """A dropped column does not exist."""


class RegionNotFound(CommandRejected):
    """The table's route has no such region."""


class RouteChanged(CommandRejected):
    """The route moved since the caller's snapshot (GreptimeDB's failover compare)."""


class NoAttributes(CommandRejected):
    """Reset of a table or partition that has no label rule (a no-op is not written)."""


class WrongPublishMode(CommandRejected):
    """The command needs the other publish mode (Publish in auto mode, a no-op switch)."""


class ChangesPending(CommandRejected):
    """Switching to auto mode while changes wait for an epoch."""


class NothingToPublish(CommandRejected):
    """Publish of a table with no pending change without an epoch."""


class EpochRegression(CommandRejected):
    """Publish at an epoch below one the table already has (pending or published)."""


class EpochNotAboveStable(CommandRejected):
    """Publish or AdvanceStableEpoch at an epoch not above the stable epoch."""


class PublishOutOfOrder(CommandRejected):
    """Publish would make a change visible before an earlier one that shares a table or key.

    The message names the earlier change (its resource_version and tables)
    that must be published first, at an epoch at or below this one.
    """
