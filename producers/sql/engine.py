"""Queries over one catalog's state: DuckDB over its Arrow relations (`relations`).

`Engine(image)` answers any SELECT DuckDB accepts over the relations, plus `SHOW
CREATE TABLE` and the effective attributes of a table's `SHOW ATTRIBUTES`, which
read the image. It reads any other `Source` the same way (`Engine(source)`), such
as the Spark projection's Delta tables. Each relation is built the first time a
query names it (the state never changes under an engine, so once): a 1M-table
image's first query pays only for the relations it reads (BENCHMARKS.md, "SQL").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from events.errors import MetalogError
from events.labels import (
    effective_labels,
    format_attributes,
    partition_rule_ranges,
    region_label_rows,
    rule_id,
    rules_of,
    table_rule_ranges,
)
from events.values import LabelRuleValue, TableInfoValue
from producers.sql.relations import RELATIONS
from producers.sql.source import ImageSource, Source
from projector.fold.image import Image

EXPRESSION_OPTIONS = frozenset({"TTL"})
"""Table options whose value is an SQL expression, printed as is (TiDB's `TTL = c + INTERVAL
n unit`); the others' values are printed as literals."""


class QueryError(MetalogError):
    """A query was refused: it does not run over the relations, or names what is not there."""


@dataclass(frozen=True)
class Result:
    """What a read statement returns: column names and rows."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


class Engine:
    """DuckDB over the Arrow relations of one catalog.

    Args:
        source: The catalog's image (its published view is what is queried), or
            another `Source` of its state.
    """

    def __init__(self, source: Image | Source) -> None:
        self.source: Source = ImageSource(source) if isinstance(source, Image) else source
        self._db = duckdb.connect(":memory:")
        self.tables: dict[str, pa.Table] = {}
        """The relations built so far, by name."""

    def relation(self, name: str) -> pa.Table:
        """The relation `name` (`RELATIONS`), built and registered on first use."""
        table = self.tables.get(name)
        if table is None:
            table = self.tables[name] = self.source.relation(name)
            # Copied into DuckDB's own storage once: a scan of a registered Arrow table
            # converts it again on every query (≈ 0.5 µs a row, 0.5 s at 1M tables).
            self._db.register("arrow_relation", table)
            self._db.execute(f'CREATE TABLE "{name}" AS SELECT * FROM arrow_relation')
            self._db.unregister("arrow_relation")
        return table

    def _prepare(self, sql: str) -> None:
        """Build the relations `sql` names; all of them if it does not parse (DuckDB
        then says what is wrong with it)."""
        try:
            named = {t.name.lower() for t in sqlglot.parse_one(sql, read="duckdb")
                     .find_all(exp.Table)}  # fmt: skip
        except (ParseError, TokenError):
            named = set(RELATIONS)
        for name in RELATIONS:
            if name in named:
                self.relation(name)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> Result:
        """Run one SELECT (DuckDB's SQL).

        Raises:
            QueryError: DuckDB refused it; the message lists the relations.
        """
        self._prepare(sql)
        try:
            cursor = self._db.execute(sql, list(params))
            columns = tuple(d[0] for d in cursor.description or ())
            rows = tuple(tuple(row) for row in cursor.fetchall())
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise QueryError(
                f"{first}; the relations are {', '.join(sorted(RELATIONS))} and "
                "INFORMATION_SCHEMA.REGION_LABEL / ATTRIBUTES (docs/sql.md)"
            ) from None
        return Result(columns, rows)

    def table(self, schema: str, table: str) -> TableInfoValue:
        """The live table of that name.

        Raises:
            QueryError: There is none; the message names the database's tables.
        """
        info = self.source.table_by_name(schema, table)
        if info is None:
            names = self.query(
                "SELECT table_name FROM table_name WHERE schema_name = ? ORDER BY 1 LIMIT 20",
                (schema,),
            ).rows
            there = ", ".join(r[0] for r in names) or "none"
            raise QueryError(
                f"table `{schema}.{table}` does not exist in catalog `{self.source.catalog}`; "
                f"tables of `{schema}`: {there}"
            )
        return info

    def show_create_table(self, schema: str, table: str) -> Result:
        """`SHOW CREATE TABLE`: MySQL's two columns, the text with the table's attributes."""
        info = self.table(schema, table)
        table_rule, partition_rules = rules_of(info, self.source.rule)
        text = create_table(info, table_rule, partition_rules)
        return Result(("Table", "Create Table"), ((info.table_name, text),))

    def show_attributes(self, schema: str, table: str, partition: str | None) -> Result:
        """The effective attributes of a table and each partition (or one partition).

        The columns are `INFORMATION_SCHEMA.ATTRIBUTES`'s; a partition's row holds its
        own labels and those it inherits from the table (its own keys win), with
        its own range: what PD applies to that key range. A rule counts only where
        its ranges cover the table's or partition's id (`events.labels.rules_of`),
        as REGION_LABEL shows it: a dropped table's rule under the same name is not
        this table's.
        """
        info = self.table(schema, table)
        table_rule, partition_rules = rules_of(info, self.source.rule)
        rows = []
        if partition is None:
            labels = effective_labels(table_rule, None)
            if labels:
                rows.append((rule_id(schema, table), labels, table_rule_ranges(info)))
        known = [p.name for p in info.partitions]
        if partition is not None and partition not in known:
            raise QueryError(
                f"table `{schema}.{table}` has no partition `{partition}`; its partitions: "
                f"{', '.join(known) or 'none'}"
            )
        for part in info.partitions:
            if partition is not None and part.name != partition:
                continue
            labels = effective_labels(table_rule, partition_rules[part.name])
            if labels:
                rows.append((rule_id(schema, table, part.name), labels,
                             partition_rule_ranges(part.partition_id)))  # fmt: skip
        shown = region_label_rows(
            LabelRuleValue(rule_id=rid, labels=labels, ranges=ranges)
            for rid, labels, ranges in rows
        )
        return Result(("ID", "TYPE", "ATTRIBUTES", "RANGES"), tuple(
            (r.rule_id, r.rule_type, r.region_label, r.ranges) for r in shown
        ))  # fmt: skip


def create_table(
    info: TableInfoValue,
    table_rule: LabelRuleValue | None,
    partition_rules: dict[str, LabelRuleValue | None],
) -> str:
    """The `CREATE TABLE` text of a table, with its and its partitions' own attributes.

    Attributes are written as TiDB's versioned comments, `/*T![attributes]
    ATTRIBUTES="k=v" */`, after the table's options and after each partition.
    metalog keeps partition names, not the partitioning method or bounds, so
    the partitions are listed by name in a `PARTITIONS (…)` block.
    """
    lines = [f"  {_quote(c.name)} {c.data_type}" + ("" if c.nullable else " NOT NULL")
             + (f" DEFAULT {c.default_value}" if c.default_value is not None else "")
             for c in info.columns]  # fmt: skip
    if info.primary_key:
        lines.append(f"  PRIMARY KEY ({', '.join(_quote(k) for k in info.primary_key)})")
    text = f"CREATE TABLE {_quote(info.table_name)} (\n" + ",\n".join(lines) + "\n)"
    for key, value in sorted(info.options.items()):
        text += f" {key}={value if key in EXPRESSION_OPTIONS else _literal(value)}"
    text += _attributes(table_rule)
    if info.partitions:
        parts = [f"PARTITION {_quote(p.name)}{_attributes(partition_rules.get(p.name))}"
                 for p in info.partitions]  # fmt: skip
        text += "\nPARTITIONS (\n  " + ",\n  ".join(parts) + "\n)"
    return text


def _attributes(rule: LabelRuleValue | None) -> str:
    if rule is None or not rule.labels:
        return ""
    return f' /*T![attributes] ATTRIBUTES="{format_attributes(rule.labels)}" */'


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: str) -> str:
    return value if value.replace("_", "").isalnum() else "'" + value.replace("'", "''") + "'"
