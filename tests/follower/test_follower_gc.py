"""`freeze_gc`: the follower moves the heap out of the cycle collector's reach only when asked."""

from __future__ import annotations

import gc

import pytest

from projector.follower.follower import Follower
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import CATALOG, produce, random_log, wait_until

pytestmark = pytest.mark.integration


def test_the_heap_is_frozen_after_publishing_only_with_freeze_gc(wire: TopicSet) -> None:
    events = random_log(6, seed=5).events
    produce(wire, events)
    gc.unfreeze()
    try:
        with Follower(wire.bootstrap, CATALOG, topics=wire.topics) as follower:
            follower.wait_for(len(events), timeout=30.0)
            assert gc.get_freeze_count() == 0
        with Follower(wire.bootstrap, CATALOG, topics=wire.topics, freeze_gc=True) as follower:
            image = follower.wait_for(len(events), timeout=30.0)
            wait_until(lambda: gc.get_freeze_count() > 0)
            # the published image is tracked, yet no generation the collector scans holds it
            assert gc.is_tracked(image)
            assert not any(tracked is image for tracked in gc.get_objects())
    finally:
        gc.unfreeze()
