"""librdkafka's errors as metalog's: one table from error code to typed error.

Where a client or the write path calls Kafka and cannot go on, it raises
`kafka_error(exc, bootstrap) from exc` instead of the `KafkaException`
(the model: pyiceberg's `_handle_non_200_response`, one table from HTTP
status to typed error). On the write path these are raised before a command
is handed to Kafka, so nothing was sent: `LeaderUnavailable` (retrying later
is safe) or `TooLarge` (it will never fit). A command that was sent and got
no reply is `CommandOutcomeUnknown`, raised where the reply is awaited. A
refused sign-in or operation is `AccessDenied`, naming the principal and the
operation: retrying cannot help.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from events.errors import MetalogError
from producers.errors import LeaderUnavailable, TooLarge
from projector.kafka.security import PLAINTEXT, KafkaSecurity, access_error

_UNREACHABLE = (
    "cannot reach the Kafka cluster at {bootstrap} ({reason}): check that it runs "
    "(`metalog status`) and that the bootstrap address is right"
)
_MISSING_TOPIC = (
    "a metalog topic is missing on {bootstrap} ({reason}): run `metalog up`, or create the "
    "topics with the right prefix"
)
_TOO_LARGE = (
    "{what} is over the Kafka record size limit ({reason}): nothing was sent; make it "
    "smaller (fewer or shorter names, columns, options, partitions)"
)

_BY_CODE: dict[int, tuple[type[MetalogError], str]] = {
    KafkaError._TRANSPORT: (LeaderUnavailable, _UNREACHABLE),
    KafkaError._ALL_BROKERS_DOWN: (LeaderUnavailable, _UNREACHABLE),
    KafkaError._TIMED_OUT: (LeaderUnavailable, _UNREACHABLE),
    KafkaError._RESOLVE: (
        LeaderUnavailable,
        "cannot resolve the Kafka address {bootstrap} ({reason}): check the host name",
    ),
    KafkaError.UNKNOWN_TOPIC_OR_PART: (LeaderUnavailable, _MISSING_TOPIC),
    KafkaError._UNKNOWN_TOPIC: (LeaderUnavailable, _MISSING_TOPIC),
    KafkaError._UNKNOWN_PARTITION: (LeaderUnavailable, _MISSING_TOPIC),
    KafkaError.MSG_SIZE_TOO_LARGE: (TooLarge, _TOO_LARGE),
    KafkaError.RECORD_LIST_TOO_LARGE: (TooLarge, _TOO_LARGE),
}
"""librdkafka error code → the metalog error raised instead, and its message."""

_ANY_OTHER = (LeaderUnavailable, "the Kafka cluster at {bootstrap} failed a request ({reason})")


def kafka_error(
    exc: KafkaException,
    bootstrap: str,
    what: str = "the record",
    *,
    security: KafkaSecurity = PLAINTEXT,
    operation: str | None = None,
) -> MetalogError:
    """The metalog error that stands for `exc` (raise it `from exc`).

    Args:
        exc: What confluent-kafka raised.
        bootstrap: The cluster the client talks to, named in the message.
        what: The record being sent, for a size error (e.g. "command `c1` (1,048,700 bytes)").
        security: The principal the client signed in as, named when it was refused.
        operation: What the client tried (e.g. "WRITE metalog.commands"), named when refused.
    """
    error = exc.args[0] if exc.args else None
    denied = access_error(error if isinstance(error, KafkaError) else None, security,
                          operation or f"use the Kafka cluster at {bootstrap}")
    if denied is not None:
        return denied
    if isinstance(error, KafkaError):
        kind, message = _BY_CODE.get(error.code(), _ANY_OTHER)
        reason = f"{error.name()}: {error.str()}"
    else:
        kind, message = _ANY_OTHER
        reason = str(error)
    return kind(message.format(bootstrap=bootstrap, reason=reason, what=what))
