"""`MetadataClient`: the API services use to change metadata through the leader."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast

from opentelemetry.trace import Span, SpanKind, Tracer

from events import commands as c
from events.replies import Committed, Rejected
from events.topics import Topics
from events.values import Column, TableRouteValue
from producers.client.channel import Channel, CommandChannel
from producers.client.embedded import LeaderChannel
from producers.client.image import catalog_image
from producers.decide.rules import validate
from producers.errors import CommandOutcomeUnknown, rejection_from_reply
from producers.leader.ids import random_uuid
from producers.leader.leader import Leader
from projector.fold.export import export
from projector.fold.image import Image
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.telemetry.tracing import parent, tracer


class MetadataClient:
    """Sends commands to a catalog's leader and waits for the outcome.

    Connects lazily (nothing touches the network before the first call), is
    safe to share between threads, and is a context manager. Each call returns
    `Committed` or raises the typed `CommandRejected` the leader replied with;
    a call that sees no reply in time raises `CommandOutcomeUnknown`, and
    retrying it with the same `command_id` is always safe: the leader applies
    a command id at most once and answers a retry with the first outcome.
    A command that breaks a rule of names, counts or ranges is refused here,
    before anything is sent (`InvalidName`, `OutOfRange`, `InvalidCommand`;
    docs/limits.md); one that cannot be sent raises `LeaderUnavailable` or
    `TooLarge` within the call's timeout.

    Args:
        bootstrap: `host:port` of the Kafka cluster.
        catalog: the catalog the calls address unless a call names another.
        actor: who makes the changes, stamped on every event.
        topics: the topic names (prefix).
        client_id: the key replies come back under; unique per client.
        timeout: seconds to wait for a reply, unless a call says otherwise.
        channel: how commands reach the leader; None: the commands topic, with
            replies read back from the replies topic (`embedded` passes another).
        security: how it signs in to Kafka (`projector.kafka.security`); default PLAINTEXT.
        snapshot_dir: where `image` and `export` find the catalog's snapshots (the
            leaders' or a follower's); None: they replay the catalog's whole partition.
        tracing: the tracer of its `metalog.client.send` spans (None: the global one). A
            call's `traceparent=` (W3C) makes its span the caller's child; the command
            record carries the span's context to the leader (docs/operations.md, "Traces").
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        catalog: str,
        actor: str,
        topics: Topics | None = None,
        client_id: str | None = None,
        timeout: float = 10.0,
        channel: Channel | None = None,
        security: KafkaSecurity = PLAINTEXT,
        snapshot_dir: Path | str | None = None,
        tracing: Tracer | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.tracer = tracing if tracing is not None else tracer("metalog.client")
        self.security = security
        self.snapshot_dir = None if snapshot_dir is None else Path(snapshot_dir)
        self.catalog = catalog
        self.actor = actor
        self.topics = topics or Topics()
        self.client_id = client_id or f"client-{uuid.uuid4()}"
        self.timeout = timeout
        self._channel = channel or CommandChannel(bootstrap, self.topics, self.client_id, timeout,
                                                  security)  # fmt: skip

    @classmethod
    def embedded(
        cls, leader: Leader, *, catalog: str, actor: str, timeout: float = 10.0
    ) -> MetadataClient:
        """A client served by a leader running in this process (embedded mode).

        The same calls and outcomes, without the topics in between: each
        command joins the leader's next batch (the same decide and transaction
        as a command from the commands topic) and no reply record is written.
        A call for a catalog this process does not lead raises `NotLeader`;
        closing the client leaves the leader running.
        """
        return cls(leader.bootstrap, catalog=catalog, actor=actor, topics=leader.topics,
                   timeout=timeout, channel=LeaderChannel(leader))  # fmt: skip

    # -- the commands -------------------------------------------------------

    def create_table(
        self,
        schema_name: str,
        table_name: str,
        columns: Sequence[Column],
        *,
        primary_key: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        partitions: Sequence[str] = (),
        regions: int = 1,
        datanodes: Sequence[int] = (1,),
        **call: Any,
    ) -> Committed:
        """Create a table; its regions are placed round robin on `datanodes`."""
        return self._table(
            c.CreateTable, schema_name, table_name, call, columns=tuple(columns),
            primary_key=tuple(primary_key), options=dict(options or {}),
            partitions=tuple(partitions), regions=regions, datanodes=tuple(datanodes),
        )  # fmt: skip

    def drop_table(self, schema_name: str, table_name: str, **call: Any) -> Committed:
        """Drop a table (recoverable until purged)."""
        return self._table(c.DropTable, schema_name, table_name, call)

    def recover_table(
        self, schema_name: str, table_name: str, table_id: int | None = None, **call: Any
    ) -> Committed:
        """Bring back a dropped table (the newest dropped one of that name, or `table_id`)."""
        return self._table(c.RecoverTable, schema_name, table_name, call, table_id=table_id)

    def purge_table(self, table_id: int, **call: Any) -> Committed:
        """Delete a dropped table's `__removed-` keys and label rules for good."""
        return self._send(c.PurgeTable, call, table_id=table_id)

    def rename_table(
        self, schema_name: str, table_name: str, new_table_name: str, **call: Any
    ) -> Committed:
        """Rename a table within its schema."""
        return self._table(
            c.RenameTable, schema_name, table_name, call, new_table_name=new_table_name
        )

    def alter_table(
        self,
        schema_name: str,
        table_name: str,
        *,
        add_columns: Sequence[Column] = (),
        drop_columns: Sequence[str] = (),
        set_options: Mapping[str, str] | None = None,
        unset_options: Sequence[str] = (),
        **call: Any,
    ) -> Committed:
        """Change a table's columns or options."""
        return self._table(
            c.AlterTable, schema_name, table_name, call, add_columns=tuple(add_columns),
            drop_columns=tuple(drop_columns), set_options=dict(set_options or {}),
            unset_options=tuple(unset_options),
        )  # fmt: skip

    def truncate_table(self, schema_name: str, table_name: str, **call: Any) -> Committed:
        """Truncate a table: it and its partitions get new ids."""
        return self._table(c.TruncateTable, schema_name, table_name, call)

    def add_partition(
        self, schema_name: str, table_name: str, partition_name: str, **call: Any
    ) -> Committed:
        """Add a partition to a table."""
        return self._table(
            c.AddPartition, schema_name, table_name, call, partition_name=partition_name
        )

    def drop_partition(
        self, schema_name: str, table_name: str, partition_name: str, **call: Any
    ) -> Committed:
        """Drop a partition (its label rule goes at once)."""
        return self._table(
            c.DropPartition, schema_name, table_name, call, partition_name=partition_name
        )

    def truncate_partition(
        self, schema_name: str, table_name: str, partition_name: str, **call: Any
    ) -> Committed:
        """Truncate a partition: it gets a new id."""
        return self._table(
            c.TruncatePartition, schema_name, table_name, call, partition_name=partition_name
        )

    def exchange_partition(
        self,
        schema_name: str,
        table_name: str,
        partition_name: str,
        other_schema_name: str,
        other_table_name: str,
        *,
        other_expected_version: int | None = None,
        **call: Any,
    ) -> Committed:
        """Swap a partition with a plain table (ids and label rules swap)."""
        return self._table(
            c.ExchangePartition, schema_name, table_name, call, partition_name=partition_name,
            other_schema_name=other_schema_name, other_table_name=other_table_name,
            other_expected_version=other_expected_version,
        )  # fmt: skip

    def failover_region(
        self,
        table_id: int,
        region_id: int,
        to_datanode: int,
        expected_route: TableRouteValue,
        **call: Any,
    ) -> Committed:
        """Move a region's leader, if the route still equals `expected_route`."""
        return self._send(
            c.FailoverRegion, call, table_id=table_id, region_id=region_id,
            to_datanode=to_datanode, expected_route=expected_route,
        )  # fmt: skip

    def set_attributes(
        self,
        schema_name: str,
        table_name: str,
        attributes: str,
        *,
        partition_name: str | None = None,
        **call: Any,
    ) -> Committed:
        """`ALTER TABLE t [PARTITION p] ATTRIBUTES='k=v[,k1=v1…]'`."""
        return self._table(
            c.SetAttributes, schema_name, table_name, call,
            partition_name=partition_name, attributes=attributes,
        )  # fmt: skip

    def reset_attributes(
        self,
        schema_name: str,
        table_name: str,
        *,
        partition_name: str | None = None,
        **call: Any,
    ) -> Committed:
        """`ALTER TABLE t [PARTITION p] ATTRIBUTES=DEFAULT`."""
        return self._table(
            c.ResetAttributes, schema_name, table_name, call, partition_name=partition_name
        )

    def publish(self, table_id: int, epoch: int, **call: Any) -> Committed:
        """Publish a table's pending changes at `epoch` (explicit publish mode)."""
        return self._send(c.Publish, call, table_id=table_id, epoch=epoch)

    def advance_stable_epoch(self, epoch: int, **call: Any) -> Committed:
        """Release every change published at or below `epoch` to followers."""
        return self._send(c.AdvanceStableEpoch, call, epoch=epoch)

    def set_publish_mode(self, mode: str, **call: Any) -> Committed:
        """Switch the catalog between `auto` and `explicit` publication."""
        return self._send(c.SetPublishMode, call, mode=mode)

    def reload(self, **call: Any) -> Committed:
        """Reload metadata: bumps the resource version only."""
        return self._send(c.Reload, call)

    # -- reads ---------------------------------------------------------------

    def image(self, catalog: str | None = None) -> Image:
        """The catalog's committed image, this client's last write included (`catalog_image`).

        Raises:
            LeaderUnavailable: The cluster or the events topic cannot be reached.
            AccessDenied: The cluster refused the client's principal.
        """
        name = catalog or self.catalog
        events = self._channel.layout().events_partition(name)
        return catalog_image(self.bootstrap, events, name, self.snapshot_dir, self.security)

    def export(self, catalog: str | None = None) -> dict[str, Any]:
        """Hasura's export: `{"resource_version": n, "metadata": {key: value}}`; bumps nothing."""
        return export(self.image(catalog))

    # -- the machinery ------------------------------------------------------

    def send(self, command: c.Command, timeout: float | None = None) -> Committed:
        """Send a ready-made command and wait for its outcome.

        Raises:
            InvalidName, OutOfRange, InvalidCommand: The command breaks a rule of
                names, counts or ranges (`producers.decide.rules.validate`); nothing was sent.
        """
        validate.check(command)
        return self._request(command, timeout)

    async def send_async(
        self, command: c.Command, timeout: float | None = None, traceparent: str | None = None
    ) -> Committed:
        """`send` for asyncio: awaits the outcome without holding a thread.

        Takes a command made by `command` (checked there, not again). Raises what
        the other calls raise.
        """
        with self._span(command, traceparent):
            reply = await self._channel.request_async(command, timeout or self.timeout)
        return _committed(command, reply)

    def command(self, kind: type[c.CommandBase], **fields: Any) -> c.Command:
        """A `kind` command of `fields`, stamped as this client's calls are, and checked.

        `fields` are the command's own (`command_id`, `catalog`,
        `expected_version` and `expected_resource_version` among them: a new id
        and this client's catalog when absent); the actor and reply address are the
        client's.

        Raises:
            InvalidName, OutOfRange, InvalidCommand: A rule of names, counts or ranges
                is broken (`producers.decide.rules.validate`).
        """
        built = validate.build(
            kind,
            **{**fields, "command_id": fields.get("command_id") or random_uuid(),
               "catalog": fields.get("catalog") or self.catalog},
            actor=self.actor,
            reply_to=self._channel.reply_to,
        )  # fmt: skip
        return cast(c.Command, built)  # every kind is a member of the union

    def _request(
        self, command: c.Command, timeout: float | None, traceparent: str | None = None
    ) -> Committed:
        with self._span(command, traceparent):
            reply = self._channel.request(command, timeout or self.timeout)
        return _committed(command, reply)

    def _span(self, command: c.Command, traceparent: str | None) -> AbstractContextManager[Span]:
        return self.tracer.start_as_current_span(
            "metalog.client.send", context=parent(traceparent), kind=SpanKind.PRODUCER,
            attributes={"metalog.command": command.type, "metalog.command_id": command.command_id},
        )  # fmt: skip

    def _table(
        self, kind: type[c.TableCommand], schema_name: str, table_name: str,
        call: dict[str, Any], **fields: Any,
    ) -> Committed:  # fmt: skip
        return self._send(kind, call, schema_name=schema_name, table_name=table_name, **fields)

    def _send(self, kind: type[c.CommandBase], call: dict[str, Any], **fields: Any) -> Committed:
        unknown = set(call) - _CALL_OPTIONS
        if unknown:
            raise TypeError(
                f"unknown option(s) {sorted(unknown)}: use one of {sorted(_CALL_OPTIONS)}"
            )
        command = self.command(
            kind,
            command_id=call.get("command_id"),
            catalog=call.get("catalog"),
            expected_version=call.get("expected_version"),
            expected_resource_version=call.get("expected_resource_version"),
            **fields,
        )
        return self._request(command, call.get("timeout"), call.get("traceparent"))

    def close(self) -> None:
        """Stop the reply reader and flush the producer."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()


def _committed(command: c.Command, reply: Committed | Rejected | None) -> Committed:
    if reply is None:
        raise CommandOutcomeUnknown(command.command_id)
    if isinstance(reply, Rejected):
        raise rejection_from_reply(reply)
    return reply


_CALL_OPTIONS = frozenset(
    {"expected_version", "expected_resource_version", "command_id", "timeout", "catalog",
     "traceparent"}
)
