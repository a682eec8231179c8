"""Writing statements → the commands they stand for: one handler per statement type.

The write half of `producers.sql.translate`, which builds and checks the commands
(`validate.build`) from what a handler returns: each command's type and fields,
and the rejection code an `IF [NOT] EXISTS` tolerates. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from events import commands as c
from events.values import Column
from producers.decide.rules.labels import parse_attributes
from producers.decide.sizes import clip
from producers.errors import InvalidCommand
from producers.sql import dialect as d
from producers.sql.errors import UnsupportedStatement

DIALECT = "tidb"

ALTER_FORMS = ("ALTER TABLE t {ADD COLUMN c T | DROP COLUMN c | RENAME TO t2 | [PARTITION p] "
    "ATTRIBUTES='k=v' | ATTRIBUTES=DEFAULT | ADD/DROP/TRUNCATE PARTITION | EXCHANGE PARTITION "
    "p WITH TABLE t2}")
"""The ALTER TABLE actions served, for messages."""

Spec = tuple[type[c.CommandBase], dict[str, Any]]
Handler = Callable[[str, Any], tuple[list[Spec], str | None]]

SHOWN = 200
"""A statement is cut to this many characters where a message quotes it."""


def _names(schema: str, table: exp.Table) -> dict[str, str]:
    return {"schema_name": table.db or schema, "table_name": table.name}


def _create(schema: str, tree: exp.Create) -> tuple[list[Spec], str | None]:
    if (tree.args.get("kind") or "").upper() != "TABLE" or not isinstance(tree.this, exp.Schema):
        raise UnsupportedStatement(
            f"`{summary(tree)}`: metalog creates tables only, with columns "
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
        elif isinstance(item, exp.Identifier):  # `(a, b INT)`: a column without its type
            raise UnsupportedStatement(
                f"column `{item.name}` has no type: write `{item.name} T` (e.g. `{item.name} INT`)"
            )
    options: dict[str, str] = {}
    partitions: list[str] = []
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        if isinstance(prop, d.Partitioning):
            partitions = _partition_names(prop)
        else:
            key, value = _option(prop)
            options[key] = value
            if key == TTL:
                _check_ttl_column(tree.this.this.name, prop.args["value"].this.name, columns)
    fields = {
        **_names(schema, tree.this.this), "columns": tuple(columns),
        "primary_key": tuple(primary), "options": options, "partitions": tuple(partitions),
    }  # fmt: skip
    return [(c.CreateTable, fields)], "NameTaken" if tree.args.get("exists") else None


def _column(item: exp.ColumnDef) -> tuple[Column, bool]:
    # A constraint is a ColumnConstraint around its kind, or (some of sqlglot's) the kind alone.
    constraints = [k.kind if isinstance(k, exp.ColumnConstraint) else k for k in item.constraints]
    is_key = any(isinstance(k, exp.PrimaryKeyColumnConstraint) for k in constraints)
    not_null = any(isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null")
                   for k in constraints)  # fmt: skip
    default = next((k.this for k in constraints if isinstance(k, exp.DefaultColumnConstraint)),
                   None)  # fmt: skip
    kind = item.args.get("kind")
    if kind is None:
        raise UnsupportedStatement(
            f"column `{item.name}` has no type: write `{item.name} T` (e.g. `{item.name} INT`)"
        )
    return Column(
        name=item.name,
        data_type=kind.sql(dialect=DIALECT),
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
    """A table option as the `KEY`, `value` text the command keeps."""
    if type(prop) is exp.Property:  # a generic `KEY = value`; its subclasses have their names
        key, value = prop.name.upper(), prop.args.get("value")
    else:
        name = _PROPERTY_NAMES.get(type(prop))
        if name is None:  # a clause sqlglot reads but that is no `OPT=v` table option
            raise UnsupportedStatement(
                f"`{clip(prop.sql(dialect=DIALECT), SHOWN)}` is not a table option metalog "
                "keeps: a table option is `OPT=v` (docs/sql.md)"
            )
        key, value = name.upper(), prop.this
    if key == TTL:
        return key, _ttl(value)
    if isinstance(value, exp.Literal):
        return key, value.name
    return key, value.sql(dialect=DIALECT) if isinstance(value, exp.Expr) else str(value)


TTL = "TTL"
"""TiDB's row time-to-live option: `TTL = column + INTERVAL n unit`."""
TTL_OPTIONS = (TTL, "TTL_ENABLE", "TTL_JOB_INTERVAL")
"""The options `ALTER TABLE t REMOVE TTL` removes (TiDB clears the table's whole TTL info)."""


def _ttl(value: object) -> str:
    """The TTL option's text, `column + INTERVAL n unit`, as TiDB's SHOW CREATE TABLE has it.

    Raises:
        UnsupportedStatement: The value is not of that form.
    """
    if (
        isinstance(value, exp.Add)
        and isinstance(value.this, exp.Column)
        and isinstance(value.expression, exp.Interval)
        and value.expression.args.get("unit") is not None
    ):
        interval = value.expression
        amount = interval.this
        count = amount.name if isinstance(amount, exp.Literal) else amount.sql(dialect=DIALECT)
        unit = interval.args["unit"].sql(dialect=DIALECT).upper()
        return f"{value.this.sql(dialect=DIALECT)} + INTERVAL {count} {unit}"
    shown = value.sql(dialect=DIALECT) if isinstance(value, exp.Expr) else str(value)
    raise UnsupportedStatement(
        f"TTL = {clip(shown, SHOWN)}: TiDB's TTL is `TTL = column + INTERVAL n unit` "
        "(e.g. TTL = created_at + INTERVAL 3 MONTH)"
    )


_PROPERTY_NAMES: dict[type[exp.Expr], str] = {
    kind: name for name, kind in exp.Properties.NAME_TO_PROPERTY.items()
}


def _drop(schema: str, tree: exp.Drop) -> tuple[list[Spec], str | None]:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        raise UnsupportedStatement(f"`{summary(tree)}`: metalog drops tables only")
    specs: list[Spec] = [(c.DropTable, _names(schema, t)) for t in tree.args["tables"]]
    return specs, "TableNotFound" if tree.args.get("exists") else None


def _truncate(schema: str, tree: exp.TruncateTable) -> tuple[list[Spec], str | None]:
    return [(c.TruncateTable, _names(schema, t)) for t in tree.expressions], None


def _rename(schema: str, old: exp.Table, new: exp.Table) -> Spec:
    names = _names(schema, old)
    if new.db and new.db != names["schema_name"]:
        raise UnsupportedStatement(
            f"RENAME {names['schema_name']}.{old.name} TO {new.db}.{new.name}: a table is renamed "
            "within its database; metalog does not move tables between databases"
        )
    return c.RenameTable, {**names, "new_table_name": new.name}


def _renames(schema: str, tree: d.RenameTables) -> tuple[list[Spec], str | None]:
    return [_rename(schema, r.this, r.args["to"]) for r in tree.expressions], None


def _alter(schema: str, tree: exp.Alter) -> tuple[list[Spec], str | None]:
    names = _names(schema, tree.this)
    actions = tree.args.get("actions") or []
    renames = [a for a in actions if isinstance(a, exp.AlterRename)]
    if renames:
        if len(actions) > 1 or tree.args.get("options"):
            raise UnsupportedStatement("RENAME TO goes alone in an ALTER TABLE: one command each")
        return [_rename(schema, tree.this, renames[0].this)], None
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
                f"`{clip(action.sql(dialect=DIALECT), SHOWN)}` is not an ALTER TABLE action "
                f"metalog serves; the actions are {ALTER_FORMS}"
            )
    options = dict(_option(p) for p in tree.args.get("options") or [])
    fields = {**names, "add_columns": tuple(add), "drop_columns": tuple(drop),
              "set_options": options}  # fmt: skip
    return [(c.AlterTable, fields)], None


def _attributes(schema: str, tree: d.Attributes) -> tuple[list[Spec], str | None]:
    names = _names(schema, tree.this)
    partition = tree.args.get("partition")
    fields: dict[str, Any] = {**names, "partition_name": partition.name if partition else None}
    value = tree.args.get("expression")
    if value is None:
        return [(c.ResetAttributes, fields)], None
    parse_attributes(value.name)  # a malformed string says which part is wrong, here
    return [(c.SetAttributes, {**fields, "attributes": value.name})], None


def _check_ttl_column(table: str, column: str, columns: list[Column]) -> None:
    """CREATE TABLE's TTL must name one of the table's columns, as TiDB checks."""
    if column not in {c.name for c in columns}:
        raise InvalidCommand(
            f"TTL of table `{table}` names column `{column}`, which it does not have: "
            f"name one of {', '.join(f'`{c.name}`' for c in columns)} (a DATE, DATETIME or "
            "TIMESTAMP column)"
        )


def _remove_ttl(schema: str, tree: d.RemoveTtl) -> tuple[list[Spec], str | None]:
    return [(c.AlterTable, {**_names(schema, tree.this), "unset_options": TTL_OPTIONS})], None


def _partitions(schema: str, tree: d.PartitionChange) -> tuple[list[Spec], str | None]:
    kind = {"ADD": c.AddPartition, "DROP": c.DropPartition, "TRUNCATE": c.TruncatePartition}
    names = _names(schema, tree.this)
    return [
        (kind[tree.args["kind"]], {**names, "partition_name": _name_of(p)})
        for p in tree.expressions
    ], None


def _exchange(schema: str, tree: d.ExchangePartition) -> tuple[list[Spec], str | None]:
    other = _names(schema, tree.expression)
    return [(c.ExchangePartition, {
        **_names(schema, tree.this), "partition_name": tree.args["partition"].name,
        "other_schema_name": other["schema_name"], "other_table_name": other["table_name"],
    })], None  # fmt: skip


def _recover(schema: str, tree: d.RecoverTable) -> tuple[list[Spec], str | None]:
    names = _names(schema, tree.this)
    specs: list[Spec] = [(c.RecoverTable, names)]
    to = tree.args.get("to")
    if to is not None:
        # FLASHBACK TABLE t TO t2: bring t back, then give it the new name.
        specs.append((c.RenameTable, {**names, "new_table_name": to.name}))
    return specs, None


WRITES: dict[type[Any], Handler] = {
    exp.Create: _create,
    exp.Drop: _drop,
    exp.TruncateTable: _truncate,
    exp.Alter: _alter,
    d.RenameTables: _renames,
    d.Attributes: _attributes,
    d.PartitionChange: _partitions,
    d.ExchangePartition: _exchange,
    d.RecoverTable: _recover,
    d.RemoveTtl: _remove_ttl,
}

# -- how messages name statements ----------------------------------------------


def summary(tree: exp.Expr) -> str:
    """How messages and `--json` name a statement: its kind and table, else its text."""
    kind = _KINDS.get(type(tree))
    if kind is None or isinstance(tree, exp.Query | exp.Show | exp.Use):
        return clip(tree.sql(dialect=DIALECT), SHOWN)
    if isinstance(tree, exp.Create | exp.Drop):  # CREATE VIEW is not CREATE TABLE
        kind = f"{kind.split()[0]} {(tree.args.get('kind') or 'TABLE').upper()}"
    table = tree.find(exp.Table)
    return kind + (f" {table.sql(dialect=DIALECT)}" if table is not None else "")


_KINDS: dict[type[Any], str] = {
    exp.Create: "CREATE TABLE", exp.Drop: "DROP TABLE", exp.TruncateTable: "TRUNCATE TABLE",
    exp.Alter: "ALTER TABLE", d.RenameTables: "RENAME TABLE", d.Attributes: "ATTRIBUTES",
    d.PartitionChange: "ALTER TABLE … PARTITION", d.ExchangePartition: "EXCHANGE PARTITION",
    d.RecoverTable: "RECOVER TABLE", d.ShowAttributes: "SHOW ATTRIBUTES",
    d.ShowCreateTable: "SHOW CREATE TABLE", d.RemoveTtl: "ALTER TABLE … REMOVE TTL",
}  # fmt: skip


def line_of_command(text: str, tree: exp.Command) -> int:
    """The line an unparsed command starts on (sqlglot keeps no position for it)."""
    body = tree.text("expression")
    at = text.find(body) if body else -1
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _name_of(node: exp.Expr) -> str:
    return node.name


def line_of(tree: exp.Expr) -> int:
    """The line a parsed statement starts on: its first identifier's (1 if it has none)."""
    for node in tree.walk():
        if isinstance(node, exp.Identifier) and node.meta.get("line"):
            return int(node.meta["line"])
    return 1
