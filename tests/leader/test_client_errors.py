"""What a `MetadataClient` caller sees when a call cannot succeed: typed errors only.

Bad values are refused by the client before anything is sent: the client
here points at a port nothing listens on, so a call that got as far as the
network would raise `LeaderUnavailable` instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException

from events.commands import DropTable
from events.topics import Topics
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import InvalidCommand, InvalidName, LeaderUnavailable, OutOfRange, TooLarge
from producers.routing.errors import write_error
from projector.errors import AccessDenied, ClusterUnavailable
from projector.kafka.errors import kafka_error
from projector.kafka.security import KafkaSecurity
from tests.fixtures.kafka import TopicSet

NOWHERE = "127.0.0.1:1"
COLUMNS = [Column(name="id", data_type="bigint")]


@pytest.fixture
def unreachable() -> Iterator[MetadataClient]:
    """A client of a cluster that is not there."""
    with MetadataClient(NOWHERE, catalog="greptime", actor="alice", timeout=1.0) as made:
        yield made


def test_a_bad_name_is_refused_before_sending(unreachable: MetadataClient) -> None:
    with pytest.raises(InvalidName, match="table_name 'b/c' is not a valid name"):
        unreachable.create_table("a", "b/c", COLUMNS)
    with pytest.raises(InvalidName, match="catalog 'a/b' is not a valid name"):
        unreachable.reload(catalog="a/b")


def test_out_of_range_values_are_refused_before_sending(unreachable: MetadataClient) -> None:
    with pytest.raises(OutOfRange, match="regions 1,000,000 is out of range"):
        unreachable.create_table("s", "t", COLUMNS, regions=1_000_000)
    with pytest.raises(OutOfRange, match=r"datanodes\[0\] -1"):
        unreachable.create_table("s", "t", COLUMNS, datanodes=[-1])
    with pytest.raises(OutOfRange, match="epoch 9,223,372,036,854,775,807 is out of range"):
        unreachable.advance_stable_epoch(2**63 - 1)


def test_values_pydantic_refuses_come_back_typed_without_pydantic_text(
    unreachable: MetadataClient,
) -> None:
    with pytest.raises(OutOfRange) as too_big:
        unreachable.publish(1, 2**70)
    with pytest.raises(InvalidCommand) as sideways:
        unreachable.set_publish_mode("sideways")
    with pytest.raises(InvalidCommand) as not_a_column:
        unreachable.create_table("s", "t", ["id"])  # type: ignore[list-item]
    assert "Publish: epoch 1,180,591,620,717,411,303,424 is out of range" in str(too_big.value)
    assert "SetPublishMode: mode 'sideways'" in str(sideways.value)
    assert "CreateTable: columns.0 'id'" in str(not_a_column.value)
    for caught in (too_big, sideways, not_a_column):
        assert "pydantic" not in str(caught.value) and "http" not in str(caught.value)


def test_a_ready_made_command_is_checked_too(unreachable: MetadataClient) -> None:
    command = DropTable(command_id="c1", catalog="greptime", actor="alice", schema_name="s",
                        table_name="a\x00")  # fmt: skip
    with pytest.raises(InvalidName, match=r"U\+0000"):
        unreachable.send(command)


def test_a_call_with_nothing_listening_raises_leader_unavailable(
    unreachable: MetadataClient,
) -> None:
    with pytest.raises(LeaderUnavailable, match=f"cannot reach the Kafka cluster at {NOWHERE}"):
        unreachable.reload()
    with pytest.raises(LeaderUnavailable, match=f"cannot reach the Kafka cluster at {NOWHERE}"):
        unreachable.image()


@pytest.mark.parametrize(
    ("code", "kind", "part"),
    [
        (KafkaError._TRANSPORT, LeaderUnavailable, "cannot reach the Kafka cluster at h:9"),
        (KafkaError._ALL_BROKERS_DOWN, LeaderUnavailable, "cannot reach"),
        (KafkaError._RESOLVE, LeaderUnavailable, "cannot resolve the Kafka address h:9"),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, LeaderUnavailable, "run `metalog up`"),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, AccessDenied,
         "TopicAuthorizationFailed: principal ANONYMOUS may not use the Kafka cluster at h:9"),
        (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, AccessDenied,
         "TransactionalIdAuthorizationFailed: principal ANONYMOUS"),
        (KafkaError.SASL_AUTHENTICATION_FAILED, AccessDenied,
         "AuthenticationFailed: principal ANONYMOUS may not sign in"),
        (KafkaError.MSG_SIZE_TOO_LARGE, TooLarge, "the record is over the Kafka record size"),
        (KafkaError.INVALID_CONFIG, LeaderUnavailable, "failed a request (INVALID_CONFIG"),
    ],
)
def test_librdkafka_codes_map_to_metalog_errors(
    code: int, kind: type[Exception], part: str
) -> None:
    error = write_error(KafkaException(KafkaError(code)), "h:9")
    assert type(error) is kind and part in str(error)


def test_a_refusal_names_the_principal_and_the_operation() -> None:
    follower = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "follower", "secret")
    error = write_error(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), "h:9",
                        security=follower, operation="WRITE metalog.events")
    assert type(error) is AccessDenied
    assert str(error).startswith(
        "TopicAuthorizationFailed: principal follower may not WRITE metalog.events: ")
    assert "secret" not in str(error) and "secret" not in repr(follower)


def test_a_kafka_exception_without_a_code_still_maps() -> None:
    error = write_error(KafkaException("topic `x` does not exist"), "h:9")
    assert type(error) is LeaderUnavailable and "topic `x` does not exist" in str(error)


@pytest.mark.parametrize("code", [KafkaError._TRANSPORT, KafkaError.UNKNOWN_TOPIC_OR_PART,
                                  KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_CONFIG])
def test_the_read_side_maps_the_same_codes_to_cluster_unavailable(code: int) -> None:
    """The one table serves the read side too: its outages are metalog errors, not the
    write side's `LeaderUnavailable`."""
    error = kafka_error(KafkaError(code), "h:9")
    assert type(error) is ClusterUnavailable
    assert str(error) == str(write_error(KafkaException(KafkaError(code)), "h:9"))


@pytest.mark.integration
def test_an_oversized_call_raises_too_large(client: MetadataClient) -> None:
    options = {"comment": "x" * 1_100_000}
    with pytest.raises(TooLarge, match=r"CreateTable `[^`]+` \(1,1\d\d,\d\d\d bytes\)"):
        client.create_table("s", "big", COLUMNS, options=options)


@pytest.mark.integration
def test_a_well_formed_call_to_a_cluster_without_the_topics_raises_leader_unavailable(
    wire: TopicSet,
) -> None:
    with (
        MetadataClient(wire.bootstrap, catalog="greptime", actor="alice", timeout=5.0,
                       topics=Topics("nosuchprefix")) as lost,
        pytest.raises(LeaderUnavailable, match="does not exist"),
    ):  # fmt: skip
        lost.reload()
