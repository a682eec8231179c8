"""Reading statements → what the query engine runs: DuckDB SQL, or a SHOW of the image.

`read_action` is the read half of `producers.sql.translate`; no I/O here either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from events.labels import rule_id
from producers.sql import dialect as d
from producers.sql.errors import UnsupportedStatement

SHOW_FORMS = ("SHOW {DATABASES | TABLES [FROM d] | CREATE TABLE t | ATTRIBUTES [FOR [DATABASE d] "
    "[TABLE t] [PARTITION p]]}")
"""The SHOW forms served, for messages."""


@dataclass(frozen=True)
class Query:
    """A SELECT for the engine, in DuckDB's SQL, with `?` parameters.

    `as_of` is the point of `AS OF RESOURCE_VERSION n` / `AS OF TIMESTAMP '…'` (a
    resource_version or an ISO time, as text): the query reads the catalog replayed
    to it instead of the current image.
    """

    sql: str
    params: tuple[Any, ...] = ()
    as_of: str | None = None


@dataclass(frozen=True)
class ShowCreateTable:
    """`SHOW CREATE TABLE schema.table`."""

    schema: str
    table: str


@dataclass(frozen=True)
class ShowAttributes:
    """`SHOW ATTRIBUTES FOR TABLE schema.table [PARTITION p]`: effective attributes."""

    schema: str
    table: str
    partition: str | None = None


@dataclass(frozen=True)
class Use:
    """`USE d`: later unqualified names are in `schema`."""

    schema: str


INFORMATION_SCHEMA = "information_schema"
INFORMATION_TABLES = frozenset({"region_label", "attributes"})
"""`INFORMATION_SCHEMA.X` relations; the engine registers them as `X`."""


def read_action(tree: exp.Expr, schema: str) -> Query | ShowCreateTable | ShowAttributes | None:
    """What a reading statement asks the engine (`schema`: the database of unqualified
    names), or None when `tree` does not read.

    Raises:
        UnsupportedStatement: A SHOW that is not served.
    """
    if isinstance(tree, exp.Query):
        as_of = _as_of(tree)
        return Query(_duckdb(tree), as_of=as_of)
    if isinstance(tree, d.ShowCreateTable):
        return ShowCreateTable(tree.this.db or schema, tree.this.name)
    if isinstance(tree, d.ShowAttributes):
        return _show_attributes(tree, schema)
    if isinstance(tree, exp.Show):
        what = tree.name.upper()
        if what == "DATABASES":
            return Query('SELECT DISTINCT schema_name AS "Database" FROM table_name ORDER BY 1')
        if what == "TABLES":
            db = tree.args.get("db")
            shown = db.name if db is not None else schema
            return Query(f'SELECT table_name AS "Tables_in_{shown}" FROM table_name '
                         "WHERE schema_name = ? ORDER BY 1", (shown,))  # fmt: skip
        raise UnsupportedStatement(
            f"SHOW {what} is not served; the forms are {SHOW_FORMS}"
        )
    return None


def _as_of(tree: exp.Expr) -> str | None:
    """The query's one `AS OF` point, taken off its tables; None without one.

    Raises:
        UnsupportedStatement: Tables read at different points.
    """
    points = set()
    for table in tree.find_all(exp.Table):
        version = table.args.get("version")
        if version is None:
            continue
        value = version.expression
        if value is None:
            raise UnsupportedStatement(
                f"AS OF {version.name} names no point: write AS OF RESOURCE_VERSION n or "
                "AS OF TIMESTAMP '2026-01-01 12:00:00'"
            )
        points.add(value.name if isinstance(value, exp.Literal) else value.sql())
        table.set("version", None)
    if len(points) > 1:
        raise UnsupportedStatement(
            f"one query reads one point: AS OF {sorted(points)} differ; use one AS OF"
        )
    return points.pop() if points else None


def _show_attributes(tree: d.ShowAttributes, default: str) -> Query | ShowAttributes:
    table = tree.this
    db = tree.args.get("db")
    schema = db.name if db is not None else (table.db if table is not None and table.db else None)
    if table is not None:
        partition = tree.args.get("partition")
        return ShowAttributes(schema or default, table.name,
                              partition.name if partition else None)  # fmt: skip
    if schema is not None:
        prefix = rule_id(schema, "")
        return Query("SELECT * FROM attributes WHERE starts_with(ID, ?) ORDER BY ID DESC",
                     (prefix,))  # fmt: skip
    return Query("SELECT * FROM attributes ORDER BY ID DESC")


def _duckdb(tree: exp.Expr) -> str:
    """The query in DuckDB's SQL, `INFORMATION_SCHEMA.X` read as the relation `x`."""

    def rename(node: exp.Expr) -> exp.Expr:
        if (
            isinstance(node, exp.Table)
            and node.db.lower() == INFORMATION_SCHEMA
            and node.name.lower() in INFORMATION_TABLES
        ):
            renamed = exp.to_table(node.name.lower())
            alias = node.args.get("alias")
            if alias is not None:
                renamed.set("alias", alias)
            return renamed
        return node

    return tree.transform(rename).sql(dialect="duckdb")
