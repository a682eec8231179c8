"""`metalog sql` end to end: unknown names told against the follower's image, the hint."""

from __future__ import annotations

import pytest

from producers.leader.leader import Leader
from tests.fixtures.kafka import TopicSet
from tests.sql.test_sql_cli import image, sql

pytestmark = pytest.mark.integration


def test_an_unknown_name_names_what_exists_and_sends_nothing(
    wire: TopicSet, leader: Leader, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = sql(wire, capsys, "CREATE TABLE orders (id INT) PARTITION BY HASH (id) PARTITIONS 2;"
                                "CREATE TABLE users (id INT)")  # fmt: skip
    assert code == 0
    before = image(wire).resource_version
    # The session has read, so its follower's image refuses the name before sending.
    code, out = sql(wire, capsys, "SHOW TABLES; DROP TABLE ordrs")
    assert code == 1 and out["error"]["type"] == "TableNotFound"
    assert ("table `test.ordrs` does not exist; the tables of `test` are `orders`, `users`"
            in out["error"]["message"])  # fmt: skip
    code, out = sql(wire, capsys, "SHOW TABLES; ALTER TABLE orders TRUNCATE PARTITION p7")
    assert code == 1 and out["error"]["type"] == "PartitionNotFound"
    assert "its partitions are `p0`, `p1`" in out["error"]["message"]
    assert image(wire).resource_version == before
    # Without a read first, the leader refuses it, and the message still names what exists.
    code, out = sql(wire, capsys, "ALTER TABLE userz ATTRIBUTES='k=v'")
    assert code == 1 and out["error"]["type"] == "TableNotFound"
    assert "the tables of `test` are `users`, `orders`" in out["error"]["message"]
    code, out = sql(wire, capsys, "DROP TABLE nowhere.t")
    assert "database `nowhere` does not exist (no table is in it); the databases are `test`" \
        in out["error"]["message"]  # fmt: skip
    assert image(wire).resource_version == before


def test_the_expected_version_hint_conditions_its_statement(
    wire: TopicSet, leader: Leader, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sql(wire, capsys, "CREATE TABLE a (id INT)")[0] == 0
    code, out = sql(wire, capsys, "ALTER /*+ EXPECTED_VERSION(7) */ TABLE a ATTRIBUTES='k=v'")
    assert code == 1 and out["error"]["type"] == "VersionConflict"
    assert out["error"]["current_version"] == 1
    code, out = sql(wire, capsys, "ALTER /*+ EXPECTED_VERSION(1) */ TABLE a ATTRIBUTES='k=v'")
    assert code == 0 and out["statements"][0]["committed"][0]["tables"][0]["version"] == 2
    head = image(wire).published.table_by_name("test", "a")
    assert head is not None and head.version == 2
