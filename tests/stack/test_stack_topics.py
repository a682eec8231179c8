"""The metalog topics exist with the configs of DESIGN.md."""

from collections.abc import Callable

import pytest

from projector.kafka.topics import DAY_MS, describe_topic_config, list_topics
from tests.fixtures.kafka import KafkaService, TopicSet


@pytest.mark.integration
def test_topics_have_their_retention(kafka: KafkaService,
                                     topics: Callable[..., TopicSet]) -> None:
    made = topics(partitions=3)
    assert describe_topic_config(kafka.bootstrap, made.events)["retention.ms"] == "-1"
    assert describe_topic_config(kafka.bootstrap, made.commands)["retention.ms"] == str(7 * DAY_MS)
    assert describe_topic_config(kafka.bootstrap, made.dlq)["retention.ms"] == str(14 * DAY_MS)
    listed = list_topics(kafka.bootstrap)
    assert {listed[name] for name in made.topics.all()} == {3}

