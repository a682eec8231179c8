"""Leaders and clients on a test's own topics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from events.event import Event
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from producers.leader.log import read_events
from tests.fixtures.kafka import TopicSet


@pytest.fixture
def client(wire: TopicSet) -> Iterator[MetadataClient]:
    """A client of catalog `greptime`."""
    with MetadataClient(wire.bootstrap, catalog="greptime", actor="alice",
                        topics=wire.topics) as made:  # fmt: skip
        yield made


@pytest.fixture
def embedded_client(leader: Leader) -> Iterator[MetadataClient]:
    """A client of catalog `greptime` served in-process by the test's leader (embedded mode)."""
    with MetadataClient.embedded(leader, catalog="greptime", actor="svc") as made:
        yield made


def log_of(wire: TopicSet, catalog: str = "greptime") -> list[Event]:
    """The committed events of a catalog, read back from the events topic."""
    return [e for e in read_events(wire.bootstrap, wire.events, 0) if e.catalog == catalog]
