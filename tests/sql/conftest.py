"""A leader on a test's own topics, for `metalog sql` end to end."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from producers.leader.leader import Leader
from tests.fixtures.kafka import TopicSet


@pytest.fixture
def wire(topics: Callable[[int], TopicSet]) -> TopicSet:
    """One test's topics, one partition each."""
    return topics(1)


@pytest.fixture
def leader(wire: TopicSet) -> Iterator[Leader]:
    """A leader serving the test's topics in a background thread."""
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders") as serving:
        assert serving.wait_until_serving(1, timeout=60.0), "the leader never owned its partition"
        yield serving
