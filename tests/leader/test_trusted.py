"""What the leader builds without validating again equals what validation gives."""

from __future__ import annotations

import uuid

import pytest

from bench.workload import Workload
from events.codec import decode_event, encode_event
from events.commands import AlterTable, CreateTable
from events.event import Event
from events.intents import TableAltered
from events.replies import Committed
from events.values import Column, TableInfoValue, TableVersion
from producers.decide.trusted import replaced, trusted
from producers.leader.ids import random_uuid
from producers.leader.local import LocalCatalog
from tests.domain.builders import stamps

COLUMNS = (Column(name="id", data_type="int64"),)


def _same(made: object, validated: object) -> None:
    assert made == validated
    assert repr(made) == repr(validated)
    assert type(made) is type(validated)
    assert made.model_fields_set == validated.model_fields_set  # type: ignore[attr-defined]
    assert list(made.__dict__) == list(validated.__dict__)


def test_trusted_equals_validated_with_defaults_and_factories() -> None:
    fields = dict(command_id="c1", catalog="greptime", actor="a", schema_name="public",
                  table_name="t", columns=COLUMNS)  # fmt: skip
    _same(trusted(CreateTable, **fields), CreateTable(**fields))
    _same(trusted(TableVersion, table_id=3, version=4), TableVersion(table_id=3, version=4))
    _same(trusted(TableAltered, table_id=3), TableAltered(table_id=3))
    one, other = trusted(TableAltered, table_id=3), trusted(TableAltered, table_id=3)
    assert one.set_options == {} and one.set_options is not other.set_options


def test_trusted_refuses_missing_and_unknown_fields() -> None:
    with pytest.raises(TypeError, match=r"missing fields \['version'\]"):
        trusted(TableVersion, table_id=1)
    with pytest.raises(TypeError, match=r"unknown fields \['extra'\]"):
        trusted(TableVersion, table_id=1, version=1, extra=2)


def test_replaced_equals_model_copy() -> None:
    info = TableInfoValue(table_id=1, catalog="c", schema_name="s", table_name="t",
                          columns=COLUMNS, version=1)  # fmt: skip
    _same(replaced(info, version=2, table_name="u"),
          info.model_copy(update={"version": 2, "table_name": "u"}))  # fmt: skip
    assert info.version == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_decided_events_equal_their_validated_round_trip(seed: int) -> None:
    """Every rule, in both publish modes: the leader's events are what validation would give."""
    workload = Workload(("a", "b"), seed=seed)
    workload.run(300)
    workload.set_mode("b", "explicit")
    workload.run(300)
    workload.publish_all("b")
    events = workload.events()
    assert len(events) > 300
    for event in events:
        assert Event.model_validate(event.model_dump()) == event
        assert decode_event(encode_event(event)) == event


def test_a_retry_returns_the_first_committed_outcome_equal_to_a_validated_one() -> None:
    local = LocalCatalog("greptime", stamps())
    local.submit(CreateTable(command_id="c1", catalog="greptime", actor="a",
                             schema_name="public", table_name="t", columns=COLUMNS))  # fmt: skip
    alter = AlterTable(command_id="c2", catalog="greptime", actor="a", schema_name="public",
                       table_name="t", set_options={"ttl": "7d"})  # fmt: skip
    first = local.submit(alter)
    expected = Committed(command_id="c2", catalog="greptime", resource_version=2,
                         tables=(TableVersion(table_id=1, version=2),), schema_epoch=2)  # fmt: skip
    _same(first, expected)
    assert local.submit(alter) == expected
    rebuilt = LocalCatalog.from_log("greptime", stamps(), local.events)
    assert rebuilt.submit(alter) == expected


def test_random_uuid_is_a_canonical_version_4_uuid() -> None:
    ids = [random_uuid() for _ in range(2_000)]
    assert len(set(ids)) == len(ids)
    for text in ids[:300]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
