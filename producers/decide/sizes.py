"""How large a record the leader may write (DESIGN.md, "Names, values and sizes").

A record must fit both the topic (`max.message.bytes`, checked by the broker
on the record batch) and the producer (`message.max.bytes`, checked by
librdkafka on the record before it is sent). `decide` measures each event's
key and value against what is left of the smaller one once the batch and the
record around them are counted.
"""

KAFKA_MAX_MESSAGE_BYTES = 1_048_588
"""Kafka's default `max.message.bytes` of a topic (the broker's `message.max.bytes`)."""

PRODUCER_MAX_MESSAGE_BYTES = 1_000_000
"""librdkafka's default `message.max.bytes`: the leader's producer keeps it."""

RECORD_OVERHEAD = 512
"""Bytes of a record batch that are neither the key nor the value of its one record.

The batch header (61 bytes), the record's framing (at most 25 bytes of
varints and attributes) and the `metalog.commands_offset` header (at most 50
bytes), with room to spare.
"""

DEFAULT_RECORD_LIMIT = KAFKA_MAX_MESSAGE_BYTES - RECORD_OVERHEAD
"""The most bytes a record's key and value may take on a topic with Kafka's defaults."""

MAX_MESSAGE_CHARS = 2_000
"""A reply's message is clipped to this many characters: it may echo a name of any length."""


def record_limit(
    topic_max_bytes: int, producer_max_bytes: int = PRODUCER_MAX_MESSAGE_BYTES
) -> int:
    """The most bytes a record's key and value may take on a topic.

    Args:
        topic_max_bytes: The topic's `max.message.bytes`.
        producer_max_bytes: The producer's `message.max.bytes`.
    """
    return min(topic_max_bytes, producer_max_bytes) - RECORD_OVERHEAD


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text`, cut to at most `limit` characters with a note of how much was left out."""
    if len(text) <= limit:
        return text
    kept = max(0, limit - 40)  # the note takes fewer than 40 characters
    return f"{text[:kept]}… ({len(text) - kept:,} more characters)"
