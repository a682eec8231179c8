"""Run SQL scripts: writes through `MetadataClient`, reads through a follower's image
(or the Spark projection's Delta tables).

`SqlSession.run(text)` translates the whole script first (`producers.sql.translate`):
a statement that does not parse or breaks a rule stops it before anything is
sent. Then it runs the statements in order; the first rejection stops the
script with `StatementRejected`, which says what was applied before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot.tokens import TokenType

from events import commands as c
from events.errors import MetalogError
from events.replies import Committed
from events.topics import Topics
from producers.client.client import MetadataClient
from producers.errors import CommandRejected
from producers.sql import translate as t
from producers.sql.dialect import TiDB
from producers.sql.engine import Engine, Result
from producers.sql.errors import SqlError
from producers.sql.names import unknown_name
from producers.sql.source import ImageSource
from projector.errors import FollowerError
from projector.fold.image import Image
from projector.follower.follower import Follower
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.replay.asof import replay_as_of
from projector.replay.point import parse_point

_BASE_FIELDS = frozenset({"type", "command_id", "catalog", "actor", "expected_version",
                          "expected_resource_version", "reply_to"})  # fmt: skip
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass(frozen=True)
class Applied:
    """A statement that ran: its commits (a write) or its result (a read)."""

    statement: t.Statement
    committed: tuple[Committed, ...] = ()
    skipped: tuple[str, ...] = ()
    result: Result | None = None

    @property
    def wrote(self) -> bool:
        """Whether the statement is a write (its commits and skips tell what it did)."""
        return isinstance(self.statement, t.Write)

    def document(self) -> dict[str, Any]:
        """The documented `--json` shape of the statement (docs/sql.md)."""
        entry: dict[str, Any] = {"line": self.statement.line, "statement": self.statement.sql}
        if self.wrote:
            entry["kind"] = "write"
            entry["committed"] = [
                {"command_id": c.command_id, "resource_version": c.resource_version,
                 "schema_epoch": c.schema_epoch,
                 "tables": [{"table_id": v.table_id, "version": v.version} for v in c.tables]}
                for c in self.committed
            ]  # fmt: skip
            entry["skipped"] = list(self.skipped)
        else:
            entry["kind"] = "read"
            result = self.result
            entry["columns"] = list(result.columns) if result else []
            entry["rows"] = [list(r) for r in result.rows] if result else []
        return entry


class StatementRejected(SqlError):
    """A statement was rejected; the ones before it stay applied.

    Attributes:
        cause: The typed error (`VersionConflict`, `TableNotFound`, `QueryError`…).
        applied: What ran before it.
    """

    def __init__(self, statement: t.Statement, cause: MetalogError,
                 applied: list[Applied]) -> None:  # fmt: skip
        writes = [a for a in applied if a.committed]
        last = max((c.resource_version for a in writes for c in a.committed), default=None)
        done = (f"{len(writes)} writing statement(s) before it were applied (up to "
                f"resource_version {last})" if writes else "nothing was applied")  # fmt: skip
        super().__init__(
            f"line {statement.line}: `{statement.sql}` was rejected "
            f"({type(cause).__name__}): {cause}; "
            f"{done}; the statements after it did not run"
        )
        self.cause = cause
        self.applied = applied


@dataclass
class SqlSession:
    """One catalog's SQL session: a client for writes, a follower for reads, both lazy.

    Args:
        bootstrap: `host:port` of the Kafka cluster.
        settings: The catalog, actor, database and optimistic checks.
        topics: The topic names (prefix).
        timeout: Seconds to wait for a reply or for the follower to catch up.
        delta_dir: Read from the Spark projection's Delta tables under this root
            instead of a follower (they trail the log by the projection's lag).
        write_security: How the client signs in (a secured cluster's client principal).
        read_security: How the follower signs in (a secured cluster's follower principal).
    """

    bootstrap: str
    settings: t.Settings
    topics: Topics = field(default_factory=Topics)
    timeout: float = 30.0
    delta_dir: str | None = None
    write_security: KafkaSecurity = PLAINTEXT
    read_security: KafkaSecurity = PLAINTEXT
    _client: MetadataClient | None = None
    _follower: Follower | None = None
    _engine: Engine | None = None
    _written: int = 0
    _engine_at: int = 0

    def run(self, text: str) -> list[Applied]:
        """Translate the whole script, then run it statement by statement.

        Raises:
            SqlError: A statement does not parse or is not served; nothing ran.
            CommandRejected: A command breaks a rule of names or attributes; nothing ran.
            StatementRejected: The leader rejected a statement; those before it are applied.
        """
        statements = t.translate(text, self.settings)
        applied: list[Applied] = []
        for statement in statements:
            if isinstance(statement, t.Write):
                applied.append(self._write(statement, applied))
                self.settings = replace(self.settings, expected_version=None,
                                        expected_resource_version=None)  # fmt: skip
                continue
            try:
                applied.append(Applied(statement, result=self._read(statement.action)))
            except MetalogError as exc:
                if not applied:
                    raise
                raise StatementRejected(statement, exc, applied) from exc
        return applied

    def _write(self, statement: t.Write, applied: list[Applied]) -> Applied:
        client = self.client()
        committed: list[Committed] = []
        skipped: list[str] = []
        for at, command in enumerate(statement.commands):
            # With a follower at hand (the session has read), a name it lacks is
            # refused here, before sending; its later commands build on the first.
            unknown = (unknown_name(self.image().published, command)
                       if at == 0 and self._follower is not None else None)  # fmt: skip
            if unknown is not None and unknown.code != statement.tolerate:
                raise StatementRejected(statement, unknown, applied)
            method = getattr(client, _SNAKE.sub("_", type(command).__name__).lower())
            fields = {k: getattr(command, k) for k in type(command).model_fields
                      if k not in _BASE_FIELDS}  # fmt: skip
            try:
                done = method(
                    **fields, expected_version=command.expected_version,
                    expected_resource_version=command.expected_resource_version,
                )  # fmt: skip
            except CommandRejected as exc:
                if exc.code == statement.tolerate:
                    skipped.append(str(exc))
                    continue
                partial = [*applied, Applied(statement, tuple(committed))] if committed else applied
                raise StatementRejected(statement, self._named(exc, command), partial) from exc
            committed.append(done)
            self._written = max(self._written, done.resource_version)
        return Applied(statement, tuple(committed), tuple(skipped))

    def _named(self, exc: CommandRejected, command: c.CommandBase) -> CommandRejected:
        """The leader's `TableNotFound` / `PartitionNotFound`, telling what does exist."""
        if exc.code not in ("TableNotFound", "PartitionNotFound"):
            return exc
        try:
            return unknown_name(self.image().published, command) or exc
        except MetalogError:  # no follower to ask: the leader's words stand
            return exc

    def _read(self, action: Any) -> Result | None:
        if isinstance(action, t.Use):
            self.settings = replace(self.settings, schema=action.schema)
            return None
        if isinstance(action, t.Query) and action.as_of is not None:
            image = replay_as_of(self.bootstrap, self.topics, self.settings.catalog,
                                 parse_point(action.as_of),
                                 security=self.read_security)  # fmt: skip
            return Engine(image).query(action.sql, action.params)
        engine = self.engine()
        if isinstance(action, t.Query):
            return engine.query(action.sql, action.params)
        if isinstance(action, t.ShowCreateTable):
            return engine.show_create_table(action.schema, action.table)
        return engine.show_attributes(action.schema, action.table, action.partition)

    @staticmethod
    def complete(text: str) -> bool:
        """Whether `text` ends a statement: its last token (the `tidb` dialect's) is `;`."""
        try:
            tokens = TiDB().tokenize(text)
        except Exception:  # an open quote: not complete yet
            return False
        return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON

    def client(self) -> MetadataClient:
        """The session's client (made on first use)."""
        if self._client is None:
            self._client = MetadataClient(self.bootstrap, catalog=self.settings.catalog,
                                          actor=self.settings.actor, topics=self.topics,
                                          timeout=self.timeout,
                                          security=self.write_security)  # fmt: skip
        return self._client

    def image(self) -> Image:
        """The follower's image (started on first use), holding this session's writes.

        Raises:
            FollowerError: The follower did not catch up within the timeout.
        """
        if self._follower is None:
            self._follower = Follower(self.bootstrap, self.settings.catalog, topics=self.topics,
                                      security=self.read_security)
            self._follower.start()
            if not self._follower.wait_caught_up(self.timeout):
                raise FollowerError(
                    f"the follower of `{self.settings.catalog}` did not catch up within "
                    f"{self.timeout:g} s: check that the cluster at {self.bootstrap} runs "
                    "(`metalog status`), or give it a longer --timeout"
                )
        return self._follower.wait_for(self._written, self.timeout)

    def engine(self) -> Engine:
        """An engine over the follower's image, holding at least this session's writes;
        with `delta_dir`, over the projection's Delta tables as they are now."""
        if self.delta_dir is not None:
            if self._engine is None or self._engine_at != self._written:
                from producers.sql.delta_source import DeltaSource  # deltalake: only when asked

                self._engine = Engine(DeltaSource(self.delta_dir, self.settings.catalog))
                self._engine_at = self._written
            return self._engine
        image = self.image()
        engine = self._engine
        if engine is None or not (isinstance(engine.source, ImageSource)
                                  and engine.source.image is image):  # fmt: skip
            engine = self._engine = Engine(image)
        return engine

    def close(self) -> None:
        """Close the client and stop the follower."""
        if self._client is not None:
            self._client.close()
        if self._follower is not None:
            self._follower.stop()
