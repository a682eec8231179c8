"""Topic administration: the four metalog topics and generic create/delete/describe.

Shared by the local stack, the test fixtures and (later) the leader, so every
caller creates topics the same way.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from events.topics import Topics
from projector.errors import TopicError
from projector.kafka.clients import CLIENT_SETTINGS
from projector.kafka.security import PLAINTEXT, KafkaSecurity, access_error, secured

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

# Retention per topic role (DESIGN.md "Topics"): the log is kept forever.
TOPIC_RETENTION_MS: dict[str, int] = {
    "commands": 7 * DAY_MS,
    "events": -1,
    "replies": 6 * HOUR_MS,
    "dlq": 14 * DAY_MS,
}


def metalog_topic_configs(prefix: str) -> dict[str, dict[str, str]]:
    """The four metalog topics (names from ``events.topics``) with their configs."""
    topics = Topics(prefix)
    names = {
        "commands": topics.commands,
        "events": topics.events,
        "replies": topics.replies,
        "dlq": topics.dlq,
    }
    return {
        names[role]: {"retention.ms": str(ms), "cleanup.policy": "delete"}
        for role, ms in TOPIC_RETENTION_MS.items()
    }


def _admin(bootstrap: str, security: KafkaSecurity) -> AdminClient:
    return AdminClient(secured({"bootstrap.servers": bootstrap, **CLIENT_SETTINGS}, security))


def _raise_if_denied(exc: KafkaException, security: KafkaSecurity, operation: str) -> None:
    denied = access_error(exc.args[0], security, operation)
    if denied is not None:
        raise denied from exc


def create_topics(
    bootstrap: str,
    names: Iterable[str],
    partitions: int,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    timeout_s: float = 30.0,
    security: KafkaSecurity = PLAINTEXT,
) -> list[str]:
    """Create topics; topics that already exist are left as they are.

    Args:
        bootstrap: ``host:port`` of the cluster.
        names: the topic names.
        partitions: the partition count of each new topic.
        configs: optional per-topic configs, keyed by topic name.
        timeout_s: how long to wait for the cluster to answer.
        security: the principal creating them (on a secured cluster, the admin).

    Returns:
        The names that were created by this call (sorted). When it returns, every
        topic is visible in the cluster metadata with a leader for each partition
        (a KRaft broker learns of a new topic a moment after the controller).

    Raises:
        TopicError: a topic could not be created for another reason than existing,
            or did not become visible within ``timeout_s``.
        AccessDenied: ``security``'s principal may not create topics.
    """
    configs = configs or {}
    new = [
        NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=-1,
            config=dict(configs.get(name, {})),
        )
        for name in names
    ]
    if not new:
        return []
    created: list[str] = []
    admin = _admin(bootstrap, security)  # must outlive the futures: a destroyed handle fails them
    futures = admin.create_topics(new, request_timeout=timeout_s, operation_timeout=timeout_s)
    for name, future in futures.items():
        try:
            _answer(future, timeout_s, f"could not create topic `{name}` on {bootstrap}")
            created.append(name)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                _raise_if_denied(exc, security, f"CREATE topic {name}")
                raise TopicError(f"could not create topic `{name}` on {bootstrap}: {exc}") from exc
    _wait_visible(admin, bootstrap, [t.topic for t in new], timeout_s)
    return sorted(created)


def _wait_visible(admin: AdminClient, bootstrap: str, names: list[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        topics = admin.list_topics(timeout=timeout_s).topics
        missing = [
            n
            for n in names
            if n not in topics
            or topics[n].error is not None
            or any(p.leader < 0 for p in topics[n].partitions.values())
        ]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TopicError(
                f"topics {missing} were created on {bootstrap} but did not get a "
                f"leader within {timeout_s:.0f} s: check the broker log"
            )
        time.sleep(0.1)


def create_metalog_topics(
    bootstrap: str, prefix: str, partitions: int, security: KafkaSecurity = PLAINTEXT
) -> list[str]:
    """Create the commands, events, replies and dlq topics of ``prefix``."""
    topics = metalog_topic_configs(prefix)
    return create_topics(bootstrap, topics, partitions, topics, security=security)


def delete_topics(
    bootstrap: str,
    names: Iterable[str],
    timeout_s: float = 30.0,
    security: KafkaSecurity = PLAINTEXT,
) -> None:
    """Delete topics; topics that do not exist are ignored."""
    names = list(names)
    if not names:
        return
    admin = _admin(bootstrap, security)
    futures = admin.delete_topics(names, request_timeout=timeout_s, operation_timeout=timeout_s)
    for name, future in futures.items():
        try:
            _answer(future, timeout_s, f"could not delete topic `{name}` on {bootstrap}")
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                _raise_if_denied(exc, security, f"DELETE topic {name}")
                raise TopicError(f"could not delete topic `{name}` on {bootstrap}: {exc}") from exc


def list_topics(
    bootstrap: str, timeout_s: float = 10.0, security: KafkaSecurity = PLAINTEXT
) -> dict[str, int]:
    """The topics of the cluster (those `security`'s principal may see) with their partitions."""
    try:
        metadata = _admin(bootstrap, security).list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise TopicError(f"could not list the topics of {bootstrap}: {exc}") from exc
    return {name: len(t.partitions) for name, t in metadata.topics.items()}


def describe_topic_config(
    bootstrap: str, name: str, timeout_s: float = 10.0, security: KafkaSecurity = PLAINTEXT
) -> dict[str, str]:
    """The effective configuration of one topic, as strings."""
    resource = ConfigResource(ResourceType.TOPIC, name)
    admin = _admin(bootstrap, security)
    future = admin.describe_configs([resource], request_timeout=timeout_s)[resource]
    failing = f"could not describe topic `{name}` on {bootstrap}"
    try:
        entries = _answer(future, timeout_s, failing)
    except KafkaException as exc:
        raise TopicError(f"{failing}: {exc}") from exc
    return {key: entry.value for key, entry in entries.items() if entry.value is not None}


def _answer(future: Future[Any], timeout_s: float, failing: str) -> Any:
    """An admin call's answer; its future's own timeout (the cluster did not answer) is a
    `TopicError` that starts with `failing` (a Kafka error is the caller's to read).

    Raises:
        TopicError: No answer within `timeout_s` seconds.
        KafkaException: The cluster answered with an error.
    """
    try:
        return future.result(timeout=timeout_s)
    except TimeoutError:
        raise TopicError(f"{failing}: no answer within {timeout_s:.0f} s") from None
