"""Statements → what to do: commands for the leader, or reads for the query engine.

`translate(text, settings)` parses a script with the `tidb` dialect (sqlglot
splits the statements) and turns each statement into a `Write` (commands,
each built and checked by `validate.build`, as the client builds them, from
what `producers.sql.writes` makes of it) or a `Read` (`producers.sql.reads`).
Everything is checked before anything runs: a script with one bad statement
sends nothing. No I/O here; `producers.sql.session` runs the result.

A statement that names several tables or partitions (`DROP TABLE a, b`,
`DROP PARTITION p0, p1`) becomes one command each, applied in order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from events import commands as c
from producers.decide.rules import validate
from producers.decide.sizes import clip
from producers.errors import CommandRejected
from producers.sql.errors import (
    SqlError,
    UnsupportedStatement,
    syntax_error,
    unreadable,
)
from producers.sql.hints import expectations
from producers.sql.reads import (  # the read actions are named here too: one import home
    SHOW_FORMS,
    Query,
    ShowAttributes,
    ShowCreateTable,
    Use,
    read_action,
)
from producers.sql.writes import (
    ALTER_FORMS,
    DIALECT,
    SHOWN,
    WRITES,
    line_of,
    line_of_command,
    summary,
)

_HINTS = {
    "ALTER": ALTER_FORMS,
    "CREATE": "CREATE TABLE [db.]t (c T [NOT NULL] [DEFAULT v], …, PRIMARY KEY (c)) "
    "[PARTITION BY RANGE|LIST|HASH (…) …]",
    "SHOW": SHOW_FORMS,
}
"""The statement forms shown with a parse error, by the statement's first word."""


@dataclass(frozen=True)
class Settings:
    """Who writes, where, and the optimistic checks of the first writing statement.

    Attributes:
        catalog: The catalog the statements address.
        actor: Stamped on every event.
        schema: The database of unqualified table names (`USE d` changes it).
        expected_version: The table version the first writing statement expects.
        expected_resource_version: The catalog's resource_version it expects.
    """

    catalog: str
    actor: str = "sql"
    schema: str = "public"
    expected_version: int | None = None
    expected_resource_version: int | None = None


@dataclass(frozen=True)
class Write:
    """A statement that changes metadata: its commands, in order.

    Attributes:
        sql: The statement, as sqlglot prints it.
        line: Where it starts in the script.
        commands: Checked commands (their ids are placeholders: the client stamps its own).
        tolerate: The rejection code to skip (`IF EXISTS` / `IF NOT EXISTS`), or None.
    """

    sql: str
    line: int
    commands: tuple[c.CommandBase, ...]
    tolerate: str | None = None


@dataclass(frozen=True)
class Read:
    """A statement that reads (or sets the session's database)."""

    sql: str
    line: int
    action: Query | ShowCreateTable | ShowAttributes | Use


Statement = Write | Read


@dataclass
class _Script:
    settings: Settings
    schema: str
    conditioned: bool = False
    out: list[Statement] = field(default_factory=list)


def parse(text: str) -> list[exp.Expr]:
    """The statements of a script, parsed with the `tidb` dialect.

    Raises:
        SqlSyntaxError: A statement does not parse, or is one sqlglot could only
            keep as an unparsed command.
    """
    # sqlglot logs a warning before it keeps a statement as an unparsed Command;
    # that is refused below with a message of ours.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    dialect = Dialect.get_or_raise(DIALECT)
    tokenizer = dialect.tokenizer()
    try:
        tokens = tokenizer.tokenize(text)
    except TokenError:
        raise unreadable(text, tokenizer.tokens, _HINTS) from None
    try:
        trees = _statements(dialect.parser().parse(tokens, text))
    except ParseError as exc:
        raise syntax_error(text, tokens, exc, _HINTS) from None
    for tree in trees:
        if isinstance(tree, exp.Command):
            raise UnsupportedStatement(
                f"line {line_of_command(text, tree)}: "
                f"`{clip(tree.sql(dialect=DIALECT), SHOWN)}` is not a statement metalog serves: "
                "docs/sql.md lists the statements"
            )
    return trees


def _statements(trees: list[exp.Expr | None]) -> list[exp.Expr]:
    """The statements, a comment right after a `;` given to the statement it precedes.

    sqlglot keeps such a comment (a hint: `; /*+ EXPECTED_VERSION(2) */ DROP …`) as a
    statement of its own, `Semicolon`.
    """
    out: list[exp.Expr] = []
    pending: list[str] = []
    for tree in trees:
        if isinstance(tree, exp.Semicolon):
            pending.extend(tree.comments or ())
        elif tree is not None:
            tree.add_comments(pending, prepend=True)
            pending = []
            out.append(tree)
    return out


def translate(text: str, settings: Settings) -> list[Statement]:
    """Every statement of a script, translated and checked; nothing runs.

    Raises:
        SqlSyntaxError: A statement does not parse.
        UnsupportedStatement: A statement is not one metalog serves.
        InvalidName, OutOfRange, InvalidCommand, InvalidAttributes: A command
            built from a statement breaks a rule; the message names the statement's line.
    """
    script = _Script(settings, settings.schema)
    line = 1
    for tree in parse(text):
        line = max(line, line_of(tree))
        try:
            script.out.append(_statement(script, tree, line))
        except (SqlError, CommandRejected) as exc:
            # The same typed error, told where in the script it is.
            exc.args = (f"line {line}: {exc}",)
            if isinstance(exc, CommandRejected):
                exc.message = exc.args[0]
            raise
    return script.out


def _statement(script: _Script, tree: exp.Expr, line: int) -> Statement:
    sql = summary(tree)
    if isinstance(tree, exp.Use):
        script.schema = tree.this.name
        return Read(sql, line, Use(script.schema))
    read = read_action(tree, script.schema)
    if read is not None:
        return Read(sql, line, read)
    handler = WRITES.get(type(tree))
    if handler is None:
        raise UnsupportedStatement(
            f"`{sql}` is not a statement metalog serves: docs/sql.md lists the statements"
        )
    specs, tolerate = handler(script.schema, tree)
    hinted = expectations(tree)
    commands = tuple(_build(script, kind, fields, hinted if at == 0 else None)
                     for at, (kind, fields) in enumerate(specs))  # fmt: skip
    return Write(sql, line, commands, tolerate)


def _build(
    script: _Script, kind: type[c.CommandBase], fields: dict[str, Any],
    hinted: dict[str, int] | None = None,
) -> c.CommandBase:  # fmt: skip
    settings = script.settings
    conditions: dict[str, Any] = {}
    if hinted:
        # The statement's own hint wins over the flags, which it uses up.
        script.conditioned = True
        conditions = dict(hinted)
    elif not script.conditioned:
        # The flags condition the first command of the script that writes: the
        # ones after it build on it, so they could never meet the same version.
        script.conditioned = True
        conditions = {
            "expected_version": settings.expected_version,
            "expected_resource_version": settings.expected_resource_version,
        }
    return validate.build(kind, command_id="sql", catalog=settings.catalog,
                          actor=settings.actor, **conditions, **fields)  # fmt: skip
