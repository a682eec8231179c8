"""SQL errors in SQL's words: every syntax error has its line and column, none names the parser.

Also TiDB's TTL table option (`TTL = column + INTERVAL n unit`, `REMOVE TTL`), which
sqlglot reads as ClickHouse's clause and used to fail with the parser's class name.
"""

from __future__ import annotations

import re

import pytest
from sqlglot import exp

from events import commands as c
from events.changes import Mutation, MutationOp
from events.keys import table_info_key, table_name_key
from events.values import Column, TableInfoValue, TableNameValue
from producers.errors import InvalidCommand
from producers.sql.engine import Engine
from producers.sql.errors import SqlError, SqlSyntaxError, UnsupportedStatement
from producers.sql.translate import Settings, Write, translate
from projector.fold.draft import mutated
from projector.fold.image import Image

S = Settings(catalog="greptime")

PARSER_WORDS = re.compile(
    r"<class|<Token|sqlglot|TokenType|\b(" + "|".join(
        name for name, value in vars(exp).items()
        if isinstance(value, type) and issubclass(value, exp.Expr) and len(name) > 3
        and name[0].isupper() and not name.isupper()) + r")\b"
)  # fmt: skip
"""What a message must never hold: sqlglot's names, classes and token reprs."""


def put(key: str, value: TableInfoValue | TableNameValue) -> Mutation:
    return Mutation(key=key, op=MutationOp.PUT, value=value)


def refused(sql: str) -> SqlError | InvalidCommand:
    with pytest.raises((SqlError, InvalidCommand)) as caught:
        translate(sql, S)
    error = caught.value
    assert isinstance(error, SqlError | InvalidCommand)
    return error


@pytest.mark.parametrize(("sql", "line", "column", "says"), [
    ("ALTER TABLE t ATTRIBUTES='merge_option=den", 1, 26, "never closed: end it with '"),
    ('ALTER TABLE t ATTRIBUTES="merge_option=den', 1, 26, 'never closed: end it with "'),
    ("SHOW TABLES;\n  ALTER TABLE t PARTITION p0\n  ATTRIBUTES = 'a=b", 3, 16, "never closed"),
    ("SELECT 1;\nSELECT `abc FROM t", 2, 8, "quoted name that starts here is never closed"),
    ("SELECT 1 /* a closed comment */ ;\n /* not closed", 2, 2, "comment that starts here"),
    ("SELECT x'zz'", 1, 8, "`x'zz'` is not a valid literal"),
])  # fmt: skip
def test_a_text_the_tokenizer_cannot_read_is_told_at_its_line_and_column(
    sql: str, line: int, column: int, says: str
) -> None:
    error = refused(sql)
    assert isinstance(error, SqlSyntaxError)
    assert (error.line, error.column) == (line, column)
    assert f"syntax error at line {line}, column {column}" in str(error)
    assert says in str(error)
    assert "Error tokenizing" not in str(error)


@pytest.mark.parametrize("sql", [
    "SELECT 1 FROM t WHERE",  # Required keyword: 'this' missing for <class '…Where'>
    "CREATE TABLE t (id INT) CACHE=1",  # … missing for <class '…Property'>
    "DROP TABLE",  # Expected table name but got <Token token_type: TokenType.SENTINEL …>
    "INSERT INTO t VALUES (1)",  # was "`Insert t` is a Insert statement"
    "ALTER TABLE t ATTRIBUTES='k=v",
    "CREATE TABLE t (id INT) TTL = id",
    "SELECT 1;\nUPDATE t SET a = 1",
    "ALTER TABLE t REMOVE",
])  # fmt: skip
def test_no_message_names_the_parsers_classes_or_tokens(sql: str) -> None:
    error = refused(sql)
    assert PARSER_WORDS.search(str(error)) is None, str(error)
    if isinstance(error, SqlSyntaxError):
        assert f"line {error.line}, column {error.column}" in str(error)


@pytest.mark.parametrize("statement", [
    "CREATE TABLE IF NOT EXISTS d.t (id INT NOT NULL DEFAULT 1, ts DATETIME, PRIMARY KEY (id)) "
    "ENGINE=InnoDB TTL = ts + INTERVAL 1 DAY PARTITION BY RANGE (id) "
    "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "ALTER /*+ EXPECTED_VERSION(3) */ TABLE t PARTITION p0 ATTRIBUTES='merge_option=allow, a=b'",
    "SELECT a, count(*) FROM table_info AS OF RESOURCE_VERSION 3 WHERE x IN (1, 2) GROUP BY a",
    "WITH x AS (SELECT 1) SELECT * FROM x UNION ALL SELECT `b` FROM \"y\"",
])  # fmt: skip
def test_every_cut_of_a_statement_is_served_or_refused_in_sql_words(statement: str) -> None:
    for end in range(1, len(statement) + 1):
        try:
            translate(statement[:end], S)
        except (SqlError, InvalidCommand) as error:  # anything else fails the test
            assert PARSER_WORDS.search(str(error)) is None, (statement[:end], str(error))


def test_a_parse_error_points_where_the_token_starts_and_gives_its_statements_form() -> None:
    error = refused("SELECT 1;\nALTER TABLE t PARTITION p ATTRIBUTES abcdef")
    assert isinstance(error, SqlSyntaxError)
    # sqlglot reports the token's last column (43); the token starts at 38.
    assert (error.line, error.column) == (2, 38)
    assert "near `abcdef`" in str(error)
    # The form is the failing statement's (ALTER), not the script's first (SELECT).
    assert "the form is ALTER TABLE t {" in str(error)


@pytest.mark.parametrize(("sql", "says"), [
    ("CREATE VIEW v AS SELECT 1", "`CREATE VIEW v`: metalog creates tables only"),
    ("DROP DATABASE d", "`DROP DATABASE d`: metalog drops tables only"),
    ("CREATE TABLE t (a, b INT)", "column `a` has no type: write `a T`"),
    ("ALTER TABLE t ADD COLUMN c IN", "column `c` has no type: write `c T`"),
    ("SELECT * FROM table_info AS OF RESOURCE_VERSION", "AS OF RESOURCE_VERSION names no point"),
])  # fmt: skip
def test_a_refused_statement_is_named_as_written_and_told_what_is_missing(
    sql: str, says: str
) -> None:
    assert says in str(refused(sql))


def test_the_end_of_the_text_is_told_as_an_incomplete_statement() -> None:
    assert "the statement ends before it is complete" in str(refused("DROP TABLE"))


@pytest.mark.parametrize(("sql", "options"), [
    ("CREATE TABLE tt (id INT, created_at DATETIME) TTL = created_at + INTERVAL 1 DAY",
     {"TTL": "created_at + INTERVAL 1 DAY"}),
    ("CREATE TABLE tt (id INT, ts TIMESTAMP) ENGINE=InnoDB TTL ts + interval 3 month "
     "TTL_ENABLE='OFF' TTL_JOB_INTERVAL='1h'",
     {"ENGINE": "InnoDB", "TTL": "ts + INTERVAL 3 MONTH", "TTL_ENABLE": "OFF",
      "TTL_JOB_INTERVAL": "1h"}),
])  # fmt: skip
def test_create_table_keeps_tidbs_ttl_as_a_table_option(sql: str, options: dict[str, str]) -> None:
    [statement] = translate(sql, S)
    assert isinstance(statement, Write)
    [command] = statement.commands
    assert isinstance(command, c.CreateTable) and command.options == options


def test_alter_table_sets_and_removes_the_ttl() -> None:
    [set_ttl, remove] = translate(
        "ALTER TABLE tt TTL = created_at + INTERVAL 7 DAY; ALTER TABLE tt REMOVE TTL", S)
    assert isinstance(set_ttl, Write) and isinstance(remove, Write)
    [command] = set_ttl.commands
    assert isinstance(command, c.AlterTable)
    assert command.set_options == {"TTL": "created_at + INTERVAL 7 DAY"}
    [command] = remove.commands
    assert isinstance(command, c.AlterTable)
    assert command.unset_options == ("TTL", "TTL_ENABLE", "TTL_JOB_INTERVAL")


def test_a_ttl_not_of_tidbs_form_or_on_a_missing_column_is_refused_in_sql_words() -> None:
    error = refused("ALTER TABLE tt TTL = created_at")
    assert isinstance(error, UnsupportedStatement)
    assert "TTL = column + INTERVAL n unit" in str(error)
    error = refused("CREATE TABLE tt (id INT) TTL = created_at + INTERVAL 1 DAY")
    assert isinstance(error, InvalidCommand)
    assert "names column `created_at`, which it does not have: name one of `id`" in str(error)


def test_show_create_table_prints_the_ttl_so_that_it_reads_back() -> None:
    info = TableInfoValue(
        table_id=7, catalog="greptime", schema_name="public", table_name="tt", version=1,
        columns=(Column(name="id", data_type="INT"), Column(name="ts", data_type="DATETIME")),
        options={"TTL": "ts + INTERVAL 1 DAY", "TTL_ENABLE": "OFF"})  # fmt: skip
    view = mutated(Image.empty("greptime").published, [
        put(table_info_key(7), info),
        put(table_name_key("greptime", "public", "tt"), TableNameValue(table_id=7)),
    ])  # fmt: skip
    [(_, text)] = Engine(Image(catalog="greptime", head=view, published=view)) \
        .show_create_table("public", "tt").rows  # fmt: skip
    assert ") TTL=ts + INTERVAL 1 DAY TTL_ENABLE=OFF" in text
    [statement] = translate(text, S)
    assert isinstance(statement, Write)
    [command] = statement.commands
    assert isinstance(command, c.CreateTable) and command.options == info.options
