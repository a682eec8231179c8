"""Embedded mode on a real broker: a `MetadataClient` served by a leader in its own process."""

from __future__ import annotations

import pytest

from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import VersionConflict
from producers.leader.leader import Leader
from projector.kafka.partition import high_watermarks
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of
from tests.leader.history import check_history

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


def test_an_embedded_client_commits_through_the_leader_and_writes_no_replies(
    wire: TopicSet, leader: Leader, embedded_client: MetadataClient
) -> None:
    created = embedded_client.create_table("public", "orders", COLUMNS)
    altered = embedded_client.alter_table(
        "public", "orders", set_options={"ttl": "7d"}, expected_version=1, command_id="alter-1"
    )
    with pytest.raises(VersionConflict) as stale:
        embedded_client.alter_table("public", "orders", set_options={"ttl": "1d"},
                                    expected_version=1)  # fmt: skip
    again = embedded_client.alter_table(
        "public", "orders", set_options={"ttl": "7d"}, expected_version=1, command_id="alter-1"
    )

    assert stale.value.current_version == 2
    assert again == altered
    log = log_of(wire)
    assert [type(e.intent).__name__ for e in log] == [
        "LeaderElected", "TableCreated", "TableAltered"
    ]
    assert [e.resource_version for e in log[1:]] == [
        created.resource_version, altered.resource_version
    ]
    assert all(e.actor == "svc" for e in log[1:])
    check_history(log)
    assert high_watermarks(wire.bootstrap, wire.replies, (0,)) == {0: 0}


def test_embedded_and_remote_clients_share_one_sequence_of_versions(
    wire: TopicSet, leader: Leader, client: MetadataClient, embedded_client: MetadataClient
) -> None:
    client.create_table("public", "orders", COLUMNS)
    embedded_client.alter_table("public", "orders", set_options={"a": "1"}, expected_version=1)
    client.alter_table("public", "orders", set_options={"b": "2"}, expected_version=2)
    embedded_client.close()  # leaves the leader serving
    client.alter_table("public", "orders", set_options={"c": "3"}, expected_version=3)

    log = log_of(wire)
    assert [t.version for e in log for t in e.tables] == [1, 2, 3, 4]
    assert [e.actor for e in log[1:]] == ["alice", "svc", "alice", "alice"]
    check_history(log)
