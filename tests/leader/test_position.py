"""Where a new leader resumes: the commands position commits with what it caused."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, TopicPartition

from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import VersionConflict
from producers.leader.leader import Leader
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


@contextmanager
def _serving(wire: TopicSet) -> Iterator[Leader]:
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders") as leader:
        assert leader.wait_until_serving(1, timeout=60.0), "the leader never owned its partition"
        yield leader


def _commands_end(wire: TopicSet) -> int:
    consumer = Consumer({"bootstrap.servers": wire.bootstrap, "group.id": f"{wire.prefix}-probe"})
    try:
        _, high = consumer.get_watermark_offsets(
            TopicPartition(wire.topics.commands, 0), timeout=10.0
        )
        return int(high)
    finally:
        consumer.close()


def test_a_new_leader_resumes_after_the_last_committed_command(wire: TopicSet) -> None:
    with MetadataClient(wire.bootstrap, catalog="greptime", actor="alice",
                        topics=wire.topics) as client:  # fmt: skip
        with _serving(wire):
            created = client.create_table("public", "orders", COLUMNS)
            client.rename_table("public", "orders", "sales", expected_version=1)
            # Refused now, and its batch writes no event: the position goes to the group.
            # It would pass after the next LeaderElected (+1), so serving it twice would
            # show up as a Reloaded event with its id.
            doomed = "reload-refused-once"
            with pytest.raises(VersionConflict):
                client.reload(
                    expected_resource_version=created.resource_version + 2, command_id=doomed
                )
        with _serving(wire) as second:
            assert second.position(0) == _commands_end(wire)
            client.reload()  # an event batch: the position rides on the event, not the group
        with _serving(wire) as third:
            assert third.position(0) == _commands_end(wire)

    log = log_of(wire)
    assert doomed not in [e.command_id for e in log]
    intents = [type(e.intent).__name__ for e in log]
    assert intents == [
        "LeaderElected", "TableCreated", "TableRenamed",
        "LeaderElected", "Reloaded", "LeaderElected",
    ]  # fmt: skip
