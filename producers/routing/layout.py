"""Where commands, events and replies go: one catalog, one partition of each topic."""

import logging
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from events.topics import Topics, partition_for
from producers.decide.sizes import KAFKA_MAX_MESSAGE_BYTES, record_limit
from producers.errors import LeaderUnavailable
from producers.routing.errors import write_error
from projector.errors import TopicError
from projector.kafka.clients import CLIENT_SETTINGS
from projector.kafka.security import PLAINTEXT, KafkaSecurity, access_error, secured
from projector.kafka.topics import describe_topic_config

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Layout:
    """The partition counts of the topics, read once from the cluster.

    The commands and events topics must have the same count: a catalog's
    commands arrive on the partition whose owner writes its events.
    """

    topics: Topics
    commands: int
    events: int
    replies: int

    def catalog_partition(self, catalog: str) -> int:
        """The partition of `catalog` in the commands and events topics."""
        return partition_for(catalog, self.commands)

    def reply_partition(self, client_id: str) -> int:
        """The partition of `metalog.replies` a client reads its replies from."""
        return partition_for(client_id, self.replies)

    def events_partition(self, catalog: str) -> TopicPartition:
        """The events partition holding `catalog`'s log."""
        return TopicPartition(self.topics.events, partition_for(catalog, self.events))


def read_layout(
    bootstrap: str, topics: Topics, timeout: float = 10.0, security: KafkaSecurity = PLAINTEXT
) -> Layout:
    """Ask the cluster for the partition counts; a missing topic is a clear error.

    Raises:
        LeaderUnavailable: The cluster did not answer within `timeout` seconds, or a
            topic is missing.
        AccessDenied: The principal may not sign in, or not see a topic.
    """
    config: dict[str, Any] = secured({"bootstrap.servers": bootstrap, **CLIENT_SETTINGS}, security)
    admin = AdminClient(config)
    try:
        metadata = admin.list_topics(timeout=max(timeout, 0.001))
    except KafkaException as exc:
        if security.username is not None:
            admin.poll(0)  # serves a refused sign-in's report (`secured`), so it is named
        raise write_error(exc, bootstrap, security=security) from exc
    counts: dict[str, int] = {}
    for name in (topics.commands, topics.events, topics.replies):
        topic = metadata.topics.get(name)
        if topic is None and security is not PLAINTEXT:
            # A listing leaves out the topics the principal may not see; asked for by
            # name, the broker says whether the topic is missing or denied.
            try:
                topic = admin.list_topics(name, timeout=max(timeout, 0.001)).topics.get(name)
            except KafkaException as exc:
                raise write_error(exc, bootstrap, security=security) from exc
            denied = access_error(topic.error if topic else None, security, f"DESCRIBE {name}")
            if denied is not None:
                raise denied
        if topic is None or topic.error is not None:
            raise LeaderUnavailable(
                f"topic `{name}` does not exist on {bootstrap}: run `metalog up` "
                "(or create the metalog topics) first"
            )
        counts[name] = len(topic.partitions)
    if counts[topics.commands] != counts[topics.events]:
        raise LeaderUnavailable(
            f"`{topics.commands}` has {counts[topics.commands]} partitions but "
            f"`{topics.events}` has {counts[topics.events]}: they must be equal"
        )
    return Layout(topics, counts[topics.commands], counts[topics.events], counts[topics.replies])


def read_record_limit(
    bootstrap: str, topic: str, timeout: float = 10.0, security: KafkaSecurity = PLAINTEXT
) -> int:
    """The most bytes an event's key and value may take: `sizes.record_limit` of `topic`.

    Reads the topic's `max.message.bytes` (DescribeConfigs); where that is not
    allowed or not answered, Kafka's default is assumed and a line is logged.
    """
    try:
        config = describe_topic_config(bootstrap, topic, timeout, security)
        configured = config.get("max.message.bytes")
        topic_max = int(configured) if configured else KAFKA_MAX_MESSAGE_BYTES
    except (TopicError, ValueError) as exc:
        log.warning(
            "could not read `max.message.bytes` of `%s` (%s): assuming Kafka's default of %d",
            topic, exc, KAFKA_MAX_MESSAGE_BYTES,
        )  # fmt: skip
        topic_max = KAFKA_MAX_MESSAGE_BYTES
    return record_limit(topic_max)
