"""The write side's reading of the one Kafka error table (`projector.kafka.errors`).

A command that cannot be handed to Kafka was not sent: the cluster or a topic is
out of reach (`LeaderUnavailable`: retrying later is safe), or the record will
never fit (`TooLarge`).
"""

from __future__ import annotations

from confluent_kafka import KafkaException

from events.errors import MetalogError
from producers.errors import LeaderUnavailable, TooLarge
from projector.kafka.errors import kafka_error
from projector.kafka.security import PLAINTEXT, KafkaSecurity


def write_error(
    exc: KafkaException,
    bootstrap: str,
    what: str = "the record",
    *,
    security: KafkaSecurity = PLAINTEXT,
    operation: str | None = None,
) -> MetalogError:
    """`kafka_error` with the write side's errors: `LeaderUnavailable`, `TooLarge`."""
    return kafka_error(exc, bootstrap, what, security=security, operation=operation,
                       unavailable=LeaderUnavailable, too_large=TooLarge)  # fmt: skip
