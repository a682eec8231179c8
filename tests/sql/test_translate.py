"""The `tidb` dialect and the translation: each statement form → its commands or read."""

from __future__ import annotations

import subprocess
import sys

import pytest

from events import commands as c
from producers.errors import InvalidAttributes, InvalidName
from producers.sql import dialect as d
from producers.sql.errors import SqlSyntaxError, UnsupportedStatement
from producers.sql.translate import (
    Query,
    Read,
    Settings,
    ShowAttributes,
    ShowCreateTable,
    Use,
    Write,
    translate,
)

S = Settings(catalog="greptime", expected_version=3)


def one(sql: str, settings: Settings = S) -> Write:
    [statement] = translate(sql, settings)
    assert isinstance(statement, Write)
    return statement


def test_the_dialect_is_found_through_the_entry_point() -> None:
    # A fresh interpreter that never imports producers.sql: only the installed
    # `sqlglot.dialects` entry point can make "tidb" known there.
    probe = (
        "import sys, sqlglot; dialect = sqlglot.Dialect.get_or_raise('tidb'); "
        "print(type(dialect).__module__, 'producers.sql.dialect' in sys.modules)"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert found == [d.TiDB.__module__, "True"]


def test_create_table_with_range_partitions_columns_key_and_options() -> None:
    [cmd] = one(
        "CREATE TABLE test.t1 (id INT NOT NULL, name VARCHAR(20) DEFAULT 'x', PRIMARY KEY (id))"
        " ENGINE=InnoDB COMMENT='hi' PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10),"
        " PARTITION p1 VALUES LESS THAN MAXVALUE)"
    ).commands
    assert isinstance(cmd, c.CreateTable)
    assert (cmd.schema_name, cmd.table_name, cmd.partitions) == ("test", "t1", ("p0", "p1"))
    assert [(x.name, x.data_type, x.nullable, x.default_value) for x in cmd.columns] == [
        ("id", "INT", False, None), ("name", "VARCHAR(20)", True, "'x'")]
    assert cmd.primary_key == ("id",)
    assert cmd.options == {"ENGINE": "InnoDB", "COMMENT": "hi"}
    assert cmd.expected_version == 3  # the flag conditions the first write


@pytest.mark.parametrize(("clause", "names"), [
    ("PARTITION BY HASH (id) PARTITIONS 3", ("p0", "p1", "p2")),
    ("PARTITION BY LIST (id) (PARTITION a VALUES IN (1, 2), PARTITION b VALUES IN (3))",
     ("a", "b")),
    ("PARTITION BY KEY () PARTITIONS 2", ("p0", "p1")),
    ("PARTITION BY RANGE COLUMNS (id) (PARTITION x VALUES LESS THAN (5))", ("x",)),
])  # fmt: skip
def test_partitioning_forms(clause: str, names: tuple[str, ...]) -> None:
    [cmd] = one(f"CREATE TABLE t (id INT) {clause}").commands
    assert isinstance(cmd, c.CreateTable) and cmd.partitions == names
    assert cmd.schema_name == "public"


@pytest.mark.parametrize(("sql", "kind", "fields"), [
    ("DROP TABLE d.t", c.DropTable, {"schema_name": "d"}),
    ("TRUNCATE TABLE t", c.TruncateTable, {}),
    ("RENAME TABLE t TO t2", c.RenameTable, {"new_table_name": "t2"}),
    ("ALTER TABLE t RENAME TO t2", c.RenameTable, {"new_table_name": "t2"}),
    ("ALTER TABLE t DROP COLUMN c", c.AlterTable, {"drop_columns": ("c",)}),
    ("ALTER TABLE t COMMENT='z'", c.AlterTable, {"set_options": {"COMMENT": "z"}}),
    ("ALTER TABLE t ADD PARTITION (PARTITION p2 VALUES LESS THAN (20))", c.AddPartition,
     {"partition_name": "p2"}),
    ("ALTER TABLE t DROP PARTITION p0", c.DropPartition, {"partition_name": "p0"}),
    ("ALTER TABLE t TRUNCATE PARTITION p0", c.TruncatePartition, {"partition_name": "p0"}),
    ("ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE d.x", c.ExchangePartition,
     {"partition_name": "p0", "other_schema_name": "d", "other_table_name": "x"}),
    ("RECOVER TABLE t", c.RecoverTable, {}),
    ("FLASHBACK TABLE t", c.RecoverTable, {}),
    ("ALTER TABLE t ATTRIBUTES='merge_option=deny'", c.SetAttributes,
     {"attributes": "merge_option=deny", "partition_name": None}),
    ("ALTER TABLE t ATTRIBUTES 'a=b, c=d'", c.SetAttributes, {"attributes": "a=b, c=d"}),
    ("ALTER TABLE t PARTITION p0 ATTRIBUTES='merge_option=allow'", c.SetAttributes,
     {"partition_name": "p0"}),
    ("ALTER TABLE t ATTRIBUTES=DEFAULT", c.ResetAttributes, {"partition_name": None}),
    ("ALTER TABLE t PARTITION p1 ATTRIBUTES DEFAULT", c.ResetAttributes, {"partition_name": "p1"}),
])  # fmt: skip
def test_each_write_form(sql: str, kind: type[c.CommandBase], fields: dict[str, object]) -> None:
    [cmd] = one(sql).commands
    assert type(cmd) is kind
    for name, value in fields.items():
        assert getattr(cmd, name) == value, name


def test_a_statement_naming_several_becomes_one_command_each() -> None:
    drop = one("DROP TABLE IF EXISTS a, d.b")
    assert [(x.schema_name, x.table_name) for x in drop.commands] == [("public", "a"), ("d", "b")]
    assert drop.tolerate == "TableNotFound"
    flash = one("FLASHBACK TABLE t TO t2").commands
    assert [type(x) for x in flash] == [c.RecoverTable, c.RenameTable]
    assert one("CREATE TABLE IF NOT EXISTS t (a INT)").tolerate == "NameTaken"


def test_reads_and_use() -> None:
    statements = translate(
        "USE test; SHOW TABLES; SHOW DATABASES; SHOW CREATE TABLE t1;\n"
        "SHOW ATTRIBUTES FOR TABLE t1 PARTITION p0; SHOW ATTRIBUTES FOR DATABASE test;\n"
        "SELECT * FROM INFORMATION_SCHEMA.REGION_LABEL", S)
    actions = [s.action for s in statements if isinstance(s, Read)]
    assert actions[0] == Use("test")
    assert actions[1] == Query('SELECT table_name AS "Tables_in_test" FROM table_name '
                               "WHERE schema_name = ? ORDER BY 1", ("test",))  # fmt: skip
    assert actions[3] == ShowCreateTable("test", "t1")
    assert actions[4] == ShowAttributes("test", "t1", "p0")
    assert actions[5] == Query(
        "SELECT * FROM attributes WHERE starts_with(ID, ?) ORDER BY ID DESC", ("schema/test/",))
    assert actions[6] == Query("SELECT * FROM region_label")
    assert [s.line for s in statements] == [1, 1, 1, 1, 2, 2, 3]


def test_a_parse_error_has_line_column_and_the_form() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        translate("SELECT 1;\nALTER TABLE t PARTITION p ATTRIBUTES 5", S)
    assert (caught.value.line, caught.value.column) == (2, 38)
    assert "line 2, column 38" in str(caught.value) and "DEFAULT" in str(caught.value)


@pytest.mark.parametrize(("sql", "error", "says"), [
    ("ALTER TABLE t ATTRIBUTES='merge_option'", InvalidAttributes, "has no `=`"),
    ("ALTER TABLE t ATTRIBUTES='db=x'", InvalidAttributes, "reserved"),
    ("CREATE TABLE `a/b` (x INT)", InvalidName, "contains `/`"),
    ("ALTER TABLE t MODIFY COLUMN c BIGINT", UnsupportedStatement, "DROP COLUMN it"),
    ("DELETE FROM t", UnsupportedStatement, "`DELETE FROM t` is not a statement metalog serves"),
    ("LOCK TABLES t READ", UnsupportedStatement, "not a statement metalog serves"),
    ("RENAME TABLE a.t TO b.t", UnsupportedStatement, "within its database"),
])  # fmt: skip
def test_bad_statements_are_typed_errors(sql: str, error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        translate(f"DROP TABLE ok;\n{sql}", S)
