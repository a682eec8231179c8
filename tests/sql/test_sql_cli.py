"""`metalog sql` end to end: statements → leader → log → follower → DuckDB."""

from __future__ import annotations

import json
from typing import Any

import pytest

from events.labels import record_key_range
from metalog.cli import main
from producers.leader.leader import Leader
from producers.leader.log import read_events
from projector.fold.apply import replay
from projector.fold.image import Image
from tests.fixtures.kafka import TopicSet

pytestmark = pytest.mark.integration


def sql(
    wire: TopicSet, capsys: pytest.CaptureFixture[str], text: str, *flags: str
) -> tuple[int, Any]:
    code = main(["sql", text, "--json", "--bootstrap", wire.bootstrap, "--prefix", wire.prefix,
                 "--database", "test", *flags])  # fmt: skip
    return code, json.loads(capsys.readouterr().out)


def image(wire: TopicSet) -> Image:
    events = [e for e in read_events(wire.bootstrap, wire.events, 0) if e.catalog == "greptime"]
    return replay(Image.empty("greptime"), events)


def rng(physical_id: int) -> str:
    r = record_key_range(physical_id)
    return f"[{r.start_key}, {r.end_key}]"


def test_ddl_attributes_and_queries_end_to_end(
    wire: TopicSet, leader: Leader, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = sql(wire, capsys, """
        CREATE TABLE t1 (id INT NOT NULL, v VARCHAR(8), PRIMARY KEY (id))
          PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10),
                                   PARTITION p1 VALUES LESS THAN MAXVALUE);
        ALTER TABLE t1 ATTRIBUTES='merge_option=deny';
        ALTER TABLE t1 PARTITION p0 ATTRIBUTES='merge_option=allow';
        CREATE TABLE t2 (id INT) ENGINE=InnoDB;
        ALTER TABLE t2 ADD COLUMN w INT;
        SELECT * FROM INFORMATION_SCHEMA.REGION_LABEL;
        SHOW ATTRIBUTES FOR TABLE t1;
        SHOW CREATE TABLE t1;
        SHOW TABLES;
        SELECT t.table_name, count(*) AS regions FROM table_info t
          JOIN table_route r USING (table_id) GROUP BY 1 ORDER BY 1""")
    assert code == 0, out
    kinds = [s["kind"] for s in out["statements"]]
    assert kinds == ["write"] * 5 + ["read"] * 5
    head = image(wire).published
    t1 = head.table_by_name("test", "t1")
    assert t1 is not None and [p.name for p in t1.partitions] == ["p0", "p1"]
    p0, p1 = (p.partition_id for p in t1.partitions)
    t2 = head.table_by_name("test", "t2")
    assert t2 is not None and [c.name for c in t2.columns] == ["id", "w"]
    assert t2.options == {"ENGINE": "InnoDB"}
    region_label, attrs, create, tables, joined = out["statements"][5:]
    assert region_label["columns"] == ["RULE_ID", "RULE_TYPE", "REGION_LABEL", "RANGES"]
    assert region_label["rows"] == [
        ["schema/test/t1/p0", "key-range", '"merge_option=allow"', rng(p0)],
        ["schema/test/t1", "key-range", '"merge_option=deny"',
         f"{rng(t1.table_id)}, {rng(p0)}, {rng(p1)}"],
    ]
    # Inheritance and priority: p1 inherits deny, p0's own allow wins.
    assert attrs["columns"] == ["ID", "TYPE", "ATTRIBUTES", "RANGES"]
    assert {r[0]: r[2] for r in attrs["rows"]} == {
        "schema/test/t1": '"merge_option=deny"', "schema/test/t1/p0": '"merge_option=allow"',
        "schema/test/t1/p1": '"merge_option=deny"'}
    text = create["rows"][0][1]
    assert create["rows"][0][0] == "t1" and "`id` INT NOT NULL" in text
    assert 'ATTRIBUTES="merge_option=deny"' in text and 'ATTRIBUTES="merge_option=allow"' in text
    assert tables == {"line": tables["line"], "statement": "SHOW TABLES", "kind": "read",
                      "columns": ["Tables_in_test"], "rows": [["t1"], ["t2"]]}
    assert joined["rows"] == [["t1", 1], ["t2", 1]]

    # The lifecycle: exchange, truncate, drop and recover move ids; rules follow.
    code, out = sql(wire, capsys, """
        CREATE TABLE x (id INT);
        ALTER TABLE t1 EXCHANGE PARTITION p1 WITH TABLE x;
        ALTER TABLE t1 TRUNCATE PARTITION p0;
        TRUNCATE TABLE t2; RENAME TABLE t2 TO t3; DROP TABLE t3; RECOVER TABLE t3;
        ALTER TABLE t1 ADD PARTITION (PARTITION p2 VALUES LESS THAN (30));
        ALTER TABLE t1 DROP PARTITION p2;
        ALTER TABLE t1 PARTITION p0 ATTRIBUTES=DEFAULT;
        SELECT ID, RANGES FROM INFORMATION_SCHEMA.ATTRIBUTES AS a ORDER BY 1""")
    assert code == 0, out
    head = image(wire).published
    t1 = head.table_by_name("test", "t1")
    assert t1 is not None and [p.name for p in t1.partitions] == ["p0", "p1"]
    assert head.table_by_name("test", "t3") is not None and head.table_by_name("test", "t2") is None
    assert out["statements"][-1]["rows"] == [
        ["schema/test/t1", ", ".join(rng(i) for i in sorted(
            [t1.table_id, *(p.partition_id for p in t1.partitions)]))]]


def test_a_rejection_stops_the_script_and_says_what_was_applied(
    wire: TopicSet, leader: Leader, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = sql(wire, capsys,
                    "CREATE TABLE a (id INT); DROP TABLE nope; CREATE TABLE b (id INT)")
    assert code == 1
    assert out["error"]["type"] == "TableNotFound"
    assert "1 writing statement(s) before it were applied" in out["error"]["message"]
    assert [s["statement"] for s in out["statements"]] == ["CREATE TABLE a"]
    head = image(wire).published
    assert head.table_by_name("test", "a") is not None and head.table_by_name("test", "b") is None
    # A stale version: the current one and what to do.
    code, out = sql(wire, capsys, "ALTER TABLE a ATTRIBUTES='k=v'", "--expected-version", "7")
    assert code == 1 and out["error"]["type"] == "VersionConflict"
    assert out["error"]["current_version"] == 1 and "re-read" in out["error"]["message"]
    code, out = sql(wire, capsys, "ALTER TABLE a ATTRIBUTES='k=v'", "--expected-version", "1")
    assert code == 0 and out["statements"][0]["committed"][0]["tables"][0]["version"] == 2


@pytest.mark.parametrize(("text", "error"), [
    ("CREATE TABLE c (id INT);\nALTER TABLE c ATTRIBUTES 5", "SqlSyntaxError"),
    ("CREATE TABLE c (id INT); ALTER TABLE c ATTRIBUTES='novalue'", "InvalidAttributes"),
    ("CREATE TABLE c (id INT); DELETE FROM c", "UnsupportedStatement"),
])  # fmt: skip
def test_a_bad_statement_sends_nothing(
    wire: TopicSet, leader: Leader, capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    code, out = sql(wire, capsys, text)
    assert code == 1 and out["error"]["type"] == error and out["statements"] == []
    assert image(wire).resource_version == 0
