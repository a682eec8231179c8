"""The audit tests' own topics."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.fixtures.kafka import TopicSet


@pytest.fixture
def wire(topics: Callable[[int], TopicSet]) -> TopicSet:
    """One test's topics, one partition each."""
    return topics(1)
