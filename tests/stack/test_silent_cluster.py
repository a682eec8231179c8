"""A cluster that takes connections and never answers: typed errors, never a raw timeout.

Found by the hour-long chaos run: a leader started while the brokers were cut
off died with a bare `TimeoutError` (an admin future's own timeout) and
another with a raw `KafkaException` from the group's committed offset.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer

from producers.decide.sizes import KAFKA_MAX_MESSAGE_BYTES, record_limit
from producers.leader.group import group_offset
from producers.routing.layout import read_record_limit
from projector.errors import ClusterUnavailable
from projector.kafka.topics import TopicError, describe_topic_config


@pytest.fixture
def silent() -> Iterator[str]:
    """host:port of a listener that accepts connections, reads and never writes."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    done.set()
    thread.join()
    server.close()
    for conn in held:
        conn.close()


def test_a_topic_config_nobody_answers_for_is_a_topic_error(silent: str) -> None:
    with pytest.raises(TopicError, match="could not describe topic `t`"):
        describe_topic_config(silent, "t", timeout_s=1.0)


def test_a_record_limit_nobody_answers_for_is_kafkas_default(silent: str) -> None:
    assert read_record_limit(silent, "t", timeout=1.0) == record_limit(KAFKA_MAX_MESSAGE_BYTES)


def test_a_group_offset_nobody_answers_for_is_cluster_unavailable(silent: str) -> None:
    consumer = Consumer({"bootstrap.servers": silent, "group.id": "g", "log_level": 0})
    try:
        with pytest.raises(ClusterUnavailable, match=silent):
            group_offset(consumer, silent, "t", 0)
    finally:
        consumer.close()
