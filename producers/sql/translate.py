"""Statements → what to do: commands for the leader, or reads for the query engine.

`translate(text, settings)` parses a script with the `tidb` dialect (sqlglot
splits the statements) and turns each statement into a `Write` (commands,
each built and checked by `validate.build`, as the client builds them) or a
`Read`. Everything is checked before anything runs: a script with one bad
statement sends nothing. No I/O here; `metalog.sql` runs the result.

A statement that names several tables or partitions (`DROP TABLE a, b`,
`DROP PARTITION p0, p1`) becomes one command each, applied in order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from events import commands as c
from events.values import Column
from producers.decide.attributes import parse_attributes
from producers.decide.rules import validate
from producers.errors import CommandRejected
from producers.sql import dialect as d
from producers.sql.errors import SqlError, SqlSyntaxError, UnsupportedStatement
from producers.sql.hints import expectations
from producers.sql.reads import (  # the read actions are named here too: one import home
    SHOW_FORMS,
    Query,
    ShowAttributes,
    ShowCreateTable,
    Use,
    read_action,
)

DIALECT = "tidb"

_HINTS = {
    "ALTER": "ALTER TABLE t {ADD COLUMN c T | DROP COLUMN c | RENAME TO t2 | [PARTITION p] "
    "ATTRIBUTES='k=v' | ATTRIBUTES=DEFAULT | ADD/DROP/TRUNCATE PARTITION | EXCHANGE PARTITION "
    "p WITH TABLE t2}",
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
    try:
        trees = _statements(sqlglot.parse(text, read=DIALECT))
    except ParseError as exc:
        error = exc.errors[0] if exc.errors else {}
        line, column = int(error.get("line") or 1), int(error.get("col") or 1)
        near = (error.get("highlight") or "").strip()
        first = text.split(None, 1)[0].upper() if text.strip() else ""
        hint = _HINTS.get(first)
        raise SqlSyntaxError(
            f"syntax error at line {line}, column {column}"
            + (f" near `{near}`" if near else "")
            + f": {error.get('description', exc)}"
            + (f"; the form is {hint}" if hint else "; docs/sql.md lists the statements"),
            line,
            column,
        ) from None
    except TokenError as exc:
        raise SqlSyntaxError(f"syntax error: {exc}", 1, 1) from None
    for tree in trees:
        if isinstance(tree, exp.Command):
            raise UnsupportedStatement(
                f"line {_line_of_command(text, tree)}: `{_clip(tree.sql(dialect=DIALECT))}` is "
                "not a statement metalog serves: "
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
        line = max(line, _line(tree))
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
    sql = _summary(tree)
    if isinstance(tree, exp.Use):
        script.schema = tree.this.name
        return Read(sql, line, Use(script.schema))
    read = read_action(tree, script.schema)
    if read is not None:
        return Read(sql, line, read)
    handler = _WRITES.get(type(tree))
    if handler is None:
        raise UnsupportedStatement(
            f"`{sql}` is a {type(tree).__name__} statement, which metalog does not "
            "serve: docs/sql.md lists the statements"
        )
    specs, tolerate = handler(script, tree)
    hinted = expectations(tree)
    commands = tuple(_build(script, kind, fields, hinted if at == 0 else None)
                     for at, (kind, fields) in enumerate(specs))  # fmt: skip
    return Write(sql, line, commands, tolerate)


# -- writes ----------------------------------------------------------------------

Spec = tuple[type[c.CommandBase], dict[str, Any]]
Handler = Callable[[_Script, Any], tuple[list[Spec], str | None]]


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


def _names(script: _Script, table: exp.Table) -> dict[str, str]:
    return {"schema_name": table.db or script.schema, "table_name": table.name}


def _create(script: _Script, tree: exp.Create) -> tuple[list[Spec], str | None]:
    if (tree.args.get("kind") or "").upper() != "TABLE" or not isinstance(tree.this, exp.Schema):
        raise UnsupportedStatement(
            f"`{_summary(tree)}`: metalog creates tables only, with columns "
            "(CREATE TABLE t (c T, …))"
        )
    columns: list[Column] = []
    primary: list[str] = []
    for item in tree.this.expressions:
        if isinstance(item, exp.ColumnDef):
            column, is_key = _column(item)
            columns.append(column)
            if is_key:
                primary.append(column.name)
        elif isinstance(item, exp.PrimaryKey):
            primary.extend(_name_of(e) for e in item.expressions)
    options: dict[str, str] = {}
    partitions: list[str] = []
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        if isinstance(prop, d.Partitioning):
            partitions = _partition_names(prop)
        else:
            key, value = _option(prop)
            options[key] = value
    fields = {
        **_names(script, tree.this.this), "columns": tuple(columns),
        "primary_key": tuple(primary), "options": options, "partitions": tuple(partitions),
    }  # fmt: skip
    return [(c.CreateTable, fields)], "NameTaken" if tree.args.get("exists") else None


def _column(item: exp.ColumnDef) -> tuple[Column, bool]:
    constraints = [k.kind for k in item.constraints]
    is_key = any(isinstance(k, exp.PrimaryKeyColumnConstraint) for k in constraints)
    not_null = any(isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null")
                   for k in constraints)  # fmt: skip
    default = next((k.this for k in constraints if isinstance(k, exp.DefaultColumnConstraint)),
                   None)  # fmt: skip
    kind = item.args.get("kind")
    return Column(
        name=item.name,
        data_type=kind.sql(dialect=DIALECT) if kind is not None else "",
        nullable=not (not_null or is_key),
        default_value=None if default is None else default.sql(dialect=DIALECT),
    ), is_key


def _partition_names(partitioning: d.Partitioning) -> list[str]:
    count = partitioning.args.get("count")
    if count is not None:
        # TiDB names the partitions of `PARTITIONS n` p0 … p{n-1}.
        number = int(count.name)
        if number < 1:
            raise UnsupportedStatement("PARTITIONS n takes a count of 1 or more")
        return [f"p{i}" for i in range(number)]
    return [p.this.name for p in partitioning.expressions]


def _option(prop: exp.Expr) -> tuple[str, str]:
    if type(prop) is exp.Property:  # a generic `KEY = value`; its subclasses have their names
        key, value = prop.name, prop.args.get("value")
    else:
        key = _PROPERTY_NAMES.get(type(prop), type(prop).__name__.removesuffix("Property").upper())
        value = prop.this
    if isinstance(value, exp.Literal):
        return key.upper(), value.name
    return key.upper(), value.sql(dialect=DIALECT) if isinstance(value, exp.Expr) else str(value)


_PROPERTY_NAMES: dict[type[exp.Expr], str] = {
    kind: name for name, kind in exp.Properties.NAME_TO_PROPERTY.items()
}


def _drop(script: _Script, tree: exp.Drop) -> tuple[list[Spec], str | None]:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        raise UnsupportedStatement(f"`{_summary(tree)}`: metalog drops tables only")
    specs: list[Spec] = [(c.DropTable, _names(script, t)) for t in tree.args["tables"]]
    return specs, "TableNotFound" if tree.args.get("exists") else None


def _truncate(script: _Script, tree: exp.TruncateTable) -> tuple[list[Spec], str | None]:
    return [(c.TruncateTable, _names(script, t)) for t in tree.expressions], None


def _rename(script: _Script, old: exp.Table, new: exp.Table) -> Spec:
    names = _names(script, old)
    if new.db and new.db != names["schema_name"]:
        raise UnsupportedStatement(
            f"RENAME {names['schema_name']}.{old.name} TO {new.db}.{new.name}: a table is renamed "
            "within its database; metalog does not move tables between databases"
        )
    return c.RenameTable, {**names, "new_table_name": new.name}


def _renames(script: _Script, tree: d.RenameTables) -> tuple[list[Spec], str | None]:
    return [_rename(script, r.this, r.args["to"]) for r in tree.expressions], None


def _alter(script: _Script, tree: exp.Alter) -> tuple[list[Spec], str | None]:
    names = _names(script, tree.this)
    actions = tree.args.get("actions") or []
    renames = [a for a in actions if isinstance(a, exp.AlterRename)]
    if renames:
        if len(actions) > 1 or tree.args.get("options"):
            raise UnsupportedStatement("RENAME TO goes alone in an ALTER TABLE: one command each")
        return [_rename(script, tree.this, renames[0].this)], None
    add: list[Column] = []
    drop: list[str] = []
    for action in actions:
        if isinstance(action, exp.ColumnDef):
            add.append(_column(action)[0])
        elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
            drop.extend(_name_of(t) for t in action.args["tables"])
        elif isinstance(action, exp.ModifyColumn):
            raise UnsupportedStatement(
                "MODIFY COLUMN: a column's type cannot be changed in place (the AlterTable "
                "command adds and drops columns); DROP COLUMN it, then ADD COLUMN it anew"
            )
        else:
            raise UnsupportedStatement(
                f"`{_clip(action.sql(dialect=DIALECT))}` is not an ALTER TABLE action metalog "
                f"serves; the actions are {_HINTS['ALTER']}"
            )
    options = dict(_option(p) for p in tree.args.get("options") or [])
    fields = {**names, "add_columns": tuple(add), "drop_columns": tuple(drop),
              "set_options": options}  # fmt: skip
    return [(c.AlterTable, fields)], None


def _attributes(script: _Script, tree: d.Attributes) -> tuple[list[Spec], str | None]:
    names = _names(script, tree.this)
    partition = tree.args.get("partition")
    fields: dict[str, Any] = {**names, "partition_name": partition.name if partition else None}
    value = tree.args.get("expression")
    if value is None:
        return [(c.ResetAttributes, fields)], None
    parse_attributes(value.name)  # a malformed string says which part is wrong, here
    return [(c.SetAttributes, {**fields, "attributes": value.name})], None


def _partitions(script: _Script, tree: d.PartitionChange) -> tuple[list[Spec], str | None]:
    kind = {"ADD": c.AddPartition, "DROP": c.DropPartition, "TRUNCATE": c.TruncatePartition}
    names = _names(script, tree.this)
    return [
        (kind[tree.args["kind"]], {**names, "partition_name": _name_of(p)})
        for p in tree.expressions
    ], None


def _exchange(script: _Script, tree: d.ExchangePartition) -> tuple[list[Spec], str | None]:
    other = _names(script, tree.expression)
    return [(c.ExchangePartition, {
        **_names(script, tree.this), "partition_name": tree.args["partition"].name,
        "other_schema_name": other["schema_name"], "other_table_name": other["table_name"],
    })], None  # fmt: skip


def _recover(script: _Script, tree: d.RecoverTable) -> tuple[list[Spec], str | None]:
    names = _names(script, tree.this)
    specs: list[Spec] = [(c.RecoverTable, names)]
    to = tree.args.get("to")
    if to is not None:
        # FLASHBACK TABLE t TO t2: bring t back, then give it the new name.
        specs.append((c.RenameTable, {**names, "new_table_name": to.name}))
    return specs, None


_WRITES: dict[type[Any], Handler] = {
    exp.Create: _create,
    exp.Drop: _drop,
    exp.TruncateTable: _truncate,
    exp.Alter: _alter,
    d.RenameTables: _renames,
    d.Attributes: _attributes,
    d.PartitionChange: _partitions,
    d.ExchangePartition: _exchange,
    d.RecoverTable: _recover,
}

# -- helpers -----------------------------------------------------------------------

def _summary(tree: exp.Expr) -> str:
    """How messages and `--json` name a statement: a query's text, else its kind and table."""
    if isinstance(tree, exp.Query | exp.Show | exp.Use):
        return _clip(tree.sql(dialect=DIALECT))
    table = tree.find(exp.Table)
    name = f" {table.sql(dialect=DIALECT)}" if table is not None else ""
    return f"{_KINDS.get(type(tree), type(tree).__name__)}{name}"


_KINDS: dict[type[Any], str] = {
    exp.Create: "CREATE TABLE", exp.Drop: "DROP TABLE", exp.TruncateTable: "TRUNCATE TABLE",
    exp.Alter: "ALTER TABLE", d.RenameTables: "RENAME TABLE", d.Attributes: "ATTRIBUTES",
    d.PartitionChange: "ALTER TABLE … PARTITION", d.ExchangePartition: "EXCHANGE PARTITION",
    d.RecoverTable: "RECOVER TABLE", d.ShowAttributes: "SHOW ATTRIBUTES",
    d.ShowCreateTable: "SHOW CREATE TABLE",
}  # fmt: skip


def _line_of_command(text: str, tree: exp.Command) -> int:
    """The line an unparsed command starts on (sqlglot keeps no position for it)."""
    body = tree.text("expression")
    at = text.find(body) if body else -1
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _name_of(node: exp.Expr) -> str:
    return node.name


def _line(tree: exp.Expr) -> int:
    for node in tree.walk():
        if isinstance(node, exp.Identifier) and node.meta.get("line"):
            return int(node.meta["line"])
    return 1


def _clip(text: str, most: int = 200) -> str:
    return text if len(text) <= most else text[:most] + "…"
