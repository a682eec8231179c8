"""librdkafka's errors as metalog's: one table from error code to typed error, for both sides.

Where a client calls Kafka and cannot go on, it raises `kafka_error(exc, bootstrap)
from exc` instead of the `KafkaException` (the model: pyiceberg's
`_handle_non_200_response`, one table from HTTP status to typed error). An
unreachable cluster or a missing topic is `ClusterUnavailable`, or the caller's
error for it: the write side raises these before a command is handed to Kafka, so
nothing was sent: `LeaderUnavailable` (retrying later is safe) or `TooLarge` (it
will never fit); a follower stops (`FollowerStopped`). A command that was sent
and got no reply is `CommandOutcomeUnknown`, raised where the reply is awaited. A
refused sign-in or operation is `AccessDenied`, naming the principal and the
operation: retrying cannot help.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException

from events.errors import MetalogError
from projector.errors import AccessDenied, ClusterUnavailable
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

_BY_CODE: dict[int, tuple[bool, str]] = {
    KafkaError._TRANSPORT: (False, _UNREACHABLE),
    KafkaError._ALL_BROKERS_DOWN: (False, _UNREACHABLE),
    KafkaError._TIMED_OUT: (False, _UNREACHABLE),
    KafkaError._RESOLVE: (
        False,
        "cannot resolve the Kafka address {bootstrap} ({reason}): check the host name",
    ),
    KafkaError.UNKNOWN_TOPIC_OR_PART: (False, _MISSING_TOPIC),
    KafkaError._UNKNOWN_TOPIC: (False, _MISSING_TOPIC),
    KafkaError._UNKNOWN_PARTITION: (False, _MISSING_TOPIC),
    KafkaError.MSG_SIZE_TOO_LARGE: (True, _TOO_LARGE),
    KafkaError.RECORD_LIST_TOO_LARGE: (True, _TOO_LARGE),
}
"""librdkafka error code → whether the record was too large (else the cluster is
unavailable), and the message of the metalog error raised instead."""

_ANY_OTHER = (False, "the Kafka cluster at {bootstrap} failed a request ({reason})")

READ_FAILURES = (ClusterUnavailable, AccessDenied)
"""What a read (`projector.kafka.partition`) raises when Kafka fails it, unless its caller
names an `unavailable` error that is no `ClusterUnavailable` (the follower's
`FollowerStopped`)."""


def kafka_error(
    exc: KafkaException | KafkaError,
    bootstrap: str,
    what: str = "the record",
    *,
    security: KafkaSecurity = PLAINTEXT,
    operation: str | None = None,
    unavailable: Callable[[str], MetalogError] = ClusterUnavailable,
    too_large: Callable[[str], MetalogError] | None = None,
) -> MetalogError:
    """The metalog error that stands for `exc` (raise it `from exc`).

    Args:
        exc: What confluent-kafka raised, or the error it reported.
        bootstrap: The cluster the client talks to, named in the message.
        what: The record being sent, for a size error (e.g. "command `c1` (1,048,700 bytes)").
        security: The principal the client signed in as, named when it was refused.
        operation: What the client tried (e.g. "WRITE metalog.commands"), named when refused.
        unavailable: What the caller raises for an unreachable cluster or a missing
            topic, made from the message (the write side's `LeaderUnavailable`; a
            follower wraps it in `FollowerStopped`).
        too_large: The caller's error for a record over the size limit (the write side's
            `TooLarge`); None: `unavailable`.
    """
    if isinstance(exc, KafkaError):
        error: object = exc
    else:
        error = exc.args[0] if exc.args else None
    denied = access_error(error if isinstance(error, KafkaError) else None, security,
                          operation or f"use the Kafka cluster at {bootstrap}")
    if denied is not None:
        return denied
    if isinstance(error, KafkaError):
        large, message = _BY_CODE.get(error.code(), _ANY_OTHER)
        reason = f"{error.name()}: {error.str()}"
    else:
        large, message = _ANY_OTHER
        reason = str(error)
    kind = too_large if large and too_large is not None else unavailable
    return kind(message.format(bootstrap=bootstrap, reason=reason, what=what))
