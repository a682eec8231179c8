"""`tidb`: sqlglot's MySQL dialect plus the TiDB statements metalog serves.

sqlglot's MySQL dialect fails on, or falls back to an unparsed `Command` for,
the statements below (FIELD-NOTES.md, "SQL"); this dialect parses each into a
node of its own:

- `ALTER TABLE t [PARTITION p] ATTRIBUTES[=]'k=v,…' | DEFAULT` → `Attributes`
  (seeds/tidb-region-label-sql.md);
- `ALTER TABLE t ADD PARTITION (PARTITION p …)`, `DROP PARTITION p`,
  `TRUNCATE PARTITION p` → `PartitionChange`;
- `ALTER TABLE t EXCHANGE PARTITION p WITH TABLE t2` → `ExchangePartition`;
- `RECOVER TABLE t`, `FLASHBACK TABLE t [TO t2]` → `RecoverTable`;
- `RENAME TABLE a TO b[, c TO d]` → `RenameTables`;
- `PARTITION BY HASH|KEY (…) PARTITIONS n`, `PARTITION BY RANGE|LIST
  [COLUMNS] (…) (…)` with a bare `MAXVALUE` → `Partitioning`;
- `SHOW ATTRIBUTES FOR [DATABASE d] [TABLE t] [PARTITION p]` → `ShowAttributes`,
  and `SHOW CREATE TABLE [db.]t` → `ShowCreateTable`;
- TiDB's TTL table option, `TTL [=] column + INTERVAL n unit` (CREATE and ALTER
  TABLE), → a generic `KEY = value` property like MySQL's other table options
  (sqlglot reads `TTL` as ClickHouse's MergeTree clause), and `ALTER TABLE t
  REMOVE TTL` → `RemoveTtl`.

sqlglot finds the dialect by name through the `sqlglot.dialects` entry point
(pyproject.toml): `sqlglot.parse(text, read="tidb")`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokens import TokenType


class Attributes(exp.Expression):
    """`ALTER TABLE this [PARTITION partition] ATTRIBUTES=expression`; no expression: DEFAULT."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "partition": False, "expression": False}


class PartitionChange(exp.Expression):
    """`ALTER TABLE this {ADD|DROP|TRUNCATE} PARTITION …`; `kind` is the verb."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "kind": True, "expressions": True}


class ExchangePartition(exp.Expression):
    """`ALTER TABLE this EXCHANGE PARTITION partition WITH TABLE expression`."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "partition": True, "expression": True}


class RecoverTable(exp.Expression):
    """`RECOVER TABLE this` or `FLASHBACK TABLE this [TO to]`."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "kind": True, "to": False}


class RenameTables(exp.Expression):
    """`RENAME TABLE a TO b[, …]`: `expressions` holds a `RenamePair` each."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True}


class RenamePair(exp.Expression):
    """`this TO to` of RENAME TABLE."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "to": True}


class Partitioning(exp.Expression):
    """`PARTITION BY kind (columns) …`: named partitions, or `count` of them (HASH, KEY)."""

    arg_types: ClassVar[dict[str, bool]] = {
        "kind": True, "columns": False, "expressions": False, "count": False,
    }  # fmt: skip


class PartitionDefinition(exp.Expression):
    """`PARTITION this [VALUES LESS THAN (…) | VALUES IN (…)]` (bounds are kept as parsed)."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expressions": False}


class ShowAttributes(exp.Expression):
    """`SHOW ATTRIBUTES [FOR [DATABASE db] [TABLE this] [PARTITION partition]]`."""

    arg_types: ClassVar[dict[str, bool]] = {"db": False, "this": False, "partition": False}


class RemoveTtl(exp.Expression):
    """`ALTER TABLE this REMOVE TTL`."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class ShowCreateTable(exp.Expression):
    """`SHOW CREATE TABLE this`."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}


class TiDBParser(MySQLParser):
    """MySQL's parser, with the statements in the module docstring."""

    VERSION_PHRASES: ClassVar[dict[tuple[str, ...], str]] = {
        **MySQLParser.VERSION_PHRASES,
        # TiDB's stale read, and metalog's own point: both answered by a replay of the log.
        ("AS", "OF", "TIMESTAMP"): "TIMESTAMP",
        ("AS", "OF", "RESOURCE_VERSION"): "RESOURCE_VERSION",
    }

    PROPERTY_PARSERS: ClassVar[dict[str, Any]] = {
        **MySQLParser.PROPERTY_PARSERS,
        "PARTITION BY": lambda self: self._parse_partitioning(),
        "TTL": lambda self: self._parse_ttl_option(),
    }

    def _parse_statement(self) -> exp.Expr | None:
        if self._match_text_seq("RECOVER", "TABLE"):
            return self.expression(RecoverTable(this=self._parse_table_parts(), kind="RECOVER"))
        if self._match_text_seq("FLASHBACK", "TABLE"):
            table = self._parse_table_parts()
            to = self._parse_id_var() if self._match_text_seq("TO") else None
            return self.expression(RecoverTable(this=table, kind="FLASHBACK", to=to))
        if self._match_text_seq("RENAME", "TABLE"):
            return self.expression(RenameTables(expressions=self._parse_csv(self._parse_rename)))
        if self._match_text_seq("SHOW", "ATTRIBUTES"):
            return self._parse_show_attributes()
        if self._match_text_seq("SHOW", "CREATE", "TABLE"):
            return self.expression(ShowCreateTable(this=self._parse_table_parts()))
        return super()._parse_statement()

    def _parse_rename(self) -> exp.Expr:
        old = self._parse_table_parts()
        if not self._match_text_seq("TO"):
            self.raise_error("Expected TO: RENAME TABLE old TO new[, old2 TO new2]")
        return self.expression(RenamePair(this=old, to=self._parse_table_parts()))

    def _parse_show_attributes(self) -> exp.Expr:
        db = table = partition = None
        if self._match_text_seq("FOR"):
            if self._match_texts(("DATABASE", "SCHEMA")):
                db = self._parse_id_var()
            if self._match(TokenType.TABLE):
                table = self._parse_table_parts()
            if self._match_text_seq("PARTITION"):
                partition = self._parse_id_var()
            if db is None and table is None:
                self.raise_error("Expected DATABASE d or TABLE t after SHOW ATTRIBUTES FOR")
        return self.expression(ShowAttributes(db=db, this=table, partition=partition))

    def _parse_alter(self) -> exp.Alter | exp.Command:
        start = self._index
        if not self._match(TokenType.TABLE):
            return super()._parse_alter()
        table = self._parse_table_parts()
        tidb = self._parse_tidb_alter(table)
        if tidb is not None:
            return tidb  # type: ignore[return-value]
        self._retreat(start)
        return super()._parse_alter()

    def _parse_tidb_alter(self, table: exp.Expr | None) -> exp.Expr | None:
        """The TiDB-only ALTER TABLE actions; None (nothing consumed) for MySQL's own."""
        if self._match_text_seq("ATTRIBUTES"):
            return self._parse_attributes(table, None)
        if self._match_text_seq("PARTITION"):
            partition = self._parse_id_var()
            if not self._match_text_seq("ATTRIBUTES"):
                self.raise_error("Expected ATTRIBUTES after ALTER TABLE t PARTITION p")
            return self._parse_attributes(table, partition)
        for verb in ("ADD", "DROP", "TRUNCATE"):
            if self._match_text_seq(verb, "PARTITION"):
                if verb == "ADD":
                    names = self._parse_wrapped_csv(self._parse_partition_definition)
                else:
                    names = self._parse_csv(self._parse_id_var)
                return self.expression(PartitionChange(this=table, kind=verb, expressions=names))
        if self._match_text_seq("REMOVE", "TTL"):
            return self.expression(RemoveTtl(this=table))
        if self._match_text_seq("EXCHANGE", "PARTITION"):
            partition = self._parse_id_var()
            if not self._match_text_seq("WITH", "TABLE"):
                self.raise_error("Expected WITH TABLE t2: EXCHANGE PARTITION p WITH TABLE t2")
            other = self._parse_table_parts()
            self._match_texts(("WITH", "WITHOUT")) and self._match_text_seq("VALIDATION")
            return self.expression(
                ExchangePartition(this=table, partition=partition, expression=other)
            )
        return None

    def _parse_attributes(self, table: exp.Expr | None, partition: exp.Expr | None) -> exp.Expr:
        self._match(TokenType.EQ)
        if self._match(TokenType.DEFAULT):
            return self.expression(Attributes(this=table, partition=partition))
        value = self._parse_string()
        if value is None:
            self.raise_error(
                "Expected a quoted 'key=value[, key1=value1…]' or DEFAULT after ATTRIBUTES"
            )
        return self.expression(Attributes(this=table, partition=partition, expression=value))

    def _parse_ttl_option(self) -> exp.Expr:
        """TiDB's `TTL [=] expr` table option; `producers.sql.writes` checks the expression."""
        self._match(TokenType.EQ)
        value = self._parse_bitwise()
        if value is None:
            self.raise_error("Expected TTL = column + INTERVAL n unit")
        return self.expression(exp.Property(this=exp.var("TTL"), value=value))

    def _parse_partitioning(self) -> exp.Expr | None:
        kind = next(
            (k for k in ("RANGE", "LIST", "HASH", "KEY") if self._match_text_seq(k)), None
        )
        if kind is None:
            self.raise_error("Expected RANGE, LIST, HASH or KEY after PARTITION BY")
            return None
        if kind in ("RANGE", "LIST") and self._match_text_seq("COLUMNS"):
            kind += " COLUMNS"
        columns = self._parse_wrapped_csv(self._parse_assignment, optional=kind == "KEY")
        count = self._parse_number() if self._match_text_seq("PARTITIONS") else None
        definitions: list[Any] = []
        if self._match(TokenType.L_PAREN, advance=False):
            definitions = self._parse_wrapped_csv(self._parse_partition_definition)
        if count is None and not definitions:
            self.raise_error(
                f"Expected the partitions: PARTITION BY {kind} (…) "
                + ("PARTITIONS n or " if kind in ("HASH", "KEY") else "")
                + "(PARTITION p0 …, …)"
            )
        return self.expression(
            Partitioning(kind=kind, columns=columns, expressions=definitions, count=count)
        )

    def _parse_partition_definition(self) -> exp.Expr:
        if not self._match_text_seq("PARTITION"):
            self.raise_error("Expected PARTITION name")
        name = self._parse_id_var()
        bounds: list[Any] = []
        if self._match_text_seq("VALUES", "LESS", "THAN"):
            if self._match_text_seq("MAXVALUE"):
                bounds = [exp.var("MAXVALUE")]
            else:
                bounds = self._parse_wrapped_csv(self._parse_expression)
        elif self._match_text_seq("VALUES", "IN"):
            bounds = self._parse_wrapped_csv(self._parse_expression)
        return self.expression(PartitionDefinition(this=name, expressions=bounds))


class TiDB(MySQL):
    """TiDB's SQL as far as metalog serves it: MySQL plus the statements above."""

    ALIAS_POST_VERSION = True  # `FROM t AS OF TIMESTAMP …`: the point, not an alias `OF`

    class Tokenizer(MySQL.Tokenizer):
        """MySQL's, except that RENAME is a statement of ours, not an unparsed command."""

        COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME}

    Parser = TiDBParser
