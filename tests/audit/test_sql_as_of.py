"""`SELECT … AS OF RESOURCE_VERSION n | AS OF TIMESTAMP …` in `metalog sql`, on a real broker."""

from __future__ import annotations

import json

import pytest

from metalog.cli import main
from producers.sql.reads import Query, read_action
from producers.sql.translate import parse
from tests.audit.scripted import lifecycle
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import CATALOG, produce


def test_as_of_is_taken_off_the_query_and_kept_as_its_point() -> None:
    [tree] = parse("SELECT t.table_name FROM table_name AS OF RESOURCE_VERSION 5 AS t")
    assert read_action(tree, "public") == Query("SELECT t.table_name FROM table_name AS t",
                                                as_of="5")  # fmt: skip
    [tree] = parse("SELECT * FROM table_info AS OF TIMESTAMP '2026-01-01 00:00:03'")
    assert read_action(tree, "public") == Query("SELECT * FROM table_info",
                                                as_of="2026-01-01 00:00:03")  # fmt: skip


@pytest.mark.integration
def test_sql_as_of_answers_from_the_replayed_catalog(
    wire: TopicSet, capsys: pytest.CaptureFixture[str]
) -> None:
    produce(wire, lifecycle().events)  # rv 2 creates public.t, rv 3 renames it to public.u

    def names(point: str) -> list[str]:
        text = f"SELECT table_name FROM table_name {point} ORDER BY 1"
        assert main(["sql", text, "--json", "--bootstrap", wire.bootstrap, "--prefix",
                     wire.prefix, "--catalog", CATALOG]) == 0  # fmt: skip
        [statement] = json.loads(capsys.readouterr().out)["statements"]
        return [row[0] for row in statement["rows"]]

    assert names("AS OF RESOURCE_VERSION 2") == ["t"]
    assert names("AS OF RESOURCE_VERSION 3") == ["u"]
    assert names("AS OF TIMESTAMP '2026-01-01 00:00:05'") == ["p", "u"]  # rv 5 at +5 s
    assert names("") == ["p", "u"]
