"""The secure stack's deny matrix, cell by cell, on a real SASL_SSL broker with ACLs.

Each principal signs in with the password `metalog up --secure` generated; what
the issue's matrix denies must come back from the broker as an authorization
error (raw clients) or as metalog's `AccessDenied` naming the principal and
the operation (metalog's own clients). What it allows is shown by doing it.
"""

from __future__ import annotations

import stat
import uuid
from dataclasses import replace

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from events.values import Column
from metalog.stack import secure as stack_secure
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from producers.leader.log import read_events
from projector.errors import AccessDenied
from projector.follower.follower import Follower
from projector.kafka.clients import CLIENT_SETTINGS
from projector.kafka.security import KafkaSecurity, secured
from projector.kafka.topics import create_topics, delete_topics, list_topics
from tests.fixtures.secure import SecureKafka

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


def _produce_error(kafka: SecureKafka, role: str, topic: str) -> int | None:
    """The error code of producing one record to `topic` as `role` (None: it was written)."""
    delivered: list[KafkaError | None] = []
    producer = Producer(secured({"bootstrap.servers": kafka.bootstrap, "acks": "all",
                                 **CLIENT_SETTINGS}, kafka.security(role)))  # fmt: skip
    producer.produce(topic, b"not an event", on_delivery=lambda err, _msg: delivered.append(err))
    assert producer.flush(30.0) == 0, "the record was never acknowledged nor refused"
    error = delivered[0]
    return None if error is None else error.code()


def _fetch_error(kafka: SecureKafka, role: str, topic: str) -> int | None:
    """The error code of fetching `topic` partition 0 as `role` (None: a fetch was served)."""
    consumer = Consumer(secured({"bootstrap.servers": kafka.bootstrap, "group.id": "unused",
                                 "enable.partition.eof": True, **CLIENT_SETTINGS},
                                kafka.security(role)))  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is None or error.code() == KafkaError._PARTITION_EOF:
                return None
            if error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,):
                return error.code()
        raise AssertionError(f"no answer to {role}'s fetch of {topic}")
    finally:
        consumer.close()


def test_the_credentials_file_is_the_owners_only_and_no_password_is_in_the_logs(
    secure_kafka: SecureKafka,
) -> None:
    path = stack_secure.credentials_file(secure_kafka.config)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    passwords = [secure_kafka.security(role).password or "" for role in
                 ("admin", "leader", "client", "follower", "projector")]  # fmt: skip
    assert all(len(p) >= 24 for p in passwords)
    for log in (secure_kafka.config.console_log, secure_kafka.config.server_log):
        text = log.read_text(errors="replace")
        assert not [p for p in passwords if p in text], f"a password is in {log}"


def test_a_follower_cannot_write_the_events_topic(secure_kafka: SecureKafka) -> None:
    code = _produce_error(secure_kafka, "follower", secure_kafka.topics.events)
    assert code == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_follower_cannot_open_a_leaders_transactional_id(secure_kafka: SecureKafka) -> None:
    producer = Producer(secured({
        "bootstrap.servers": secure_kafka.bootstrap, **CLIENT_SETTINGS,
        "transactional.id": f"{secure_kafka.topics.prefix}-leader-0"},
        secure_kafka.security("follower")))  # fmt: skip
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(30.0)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


@pytest.mark.parametrize("role", ["leader", "client", "follower", "projector"])
def test_only_the_admin_may_create_or_delete_topics(
    secure_kafka: SecureKafka, role: str
) -> None:
    security = secure_kafka.security(role)
    with pytest.raises(AccessDenied, match=f"principal {role} may not DELETE topic "
                                           f"{secure_kafka.topics.events}"):  # fmt: skip
        delete_topics(secure_kafka.bootstrap, [secure_kafka.topics.events], security=security)
    name = f"{secure_kafka.topics.prefix}.new-{uuid.uuid4().hex[:8]}"
    with pytest.raises(AccessDenied, match=f"principal {role} may not CREATE topic {name}"):
        create_topics(secure_kafka.bootstrap, [name], 1, security=security)
    admin = secure_kafka.security("admin")
    assert secure_kafka.topics.events in list_topics(secure_kafka.bootstrap, security=admin)
    assert name not in list_topics(secure_kafka.bootstrap, security=admin)


def test_a_client_cannot_write_or_read_the_events_topic(secure_kafka: SecureKafka) -> None:
    events = secure_kafka.topics.events
    assert _produce_error(secure_kafka, "client", events) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _fetch_error(secure_kafka, "client", events) == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_the_projector_and_the_follower_may_read_the_events_topic(
    secure_kafka: SecureKafka,
) -> None:
    assert _fetch_error(secure_kafka, "projector", secure_kafka.topics.events) is None
    assert _fetch_error(secure_kafka, "follower", secure_kafka.topics.events) is None


def test_a_follower_signed_in_as_a_leader_is_refused_by_name(secure_kafka: SecureKafka) -> None:
    impostor = Leader(secure_kafka.bootstrap, topics=secure_kafka.topics,
                      security=secure_kafka.security("follower"))
    with pytest.raises(AccessDenied, match="TopicAuthorizationFailed: principal follower may "
                                           f"not DESCRIBE {secure_kafka.topics.commands}"):
        impostor.start()  # fmt: skip


def test_a_command_from_a_principal_that_may_not_write_commands_is_refused_by_name(
    secure_kafka: SecureKafka,
) -> None:
    # The leader principal sees the topics but may not WRITE commands: the call gets
    # the refusal from the producer's delivery report, not the reply's timeout.
    with (MetadataClient(secure_kafka.bootstrap, catalog="c", actor="alice", timeout=60.0,
                         topics=secure_kafka.topics,
                         security=secure_kafka.security("leader")) as client,
          pytest.raises(AccessDenied, match="TopicAuthorizationFailed: principal leader may not "
                                            f"WRITE {secure_kafka.topics.commands}")):  # fmt: skip
        client.reload()


def test_a_leader_in_a_group_it_may_not_read_stops_naming_the_group(
    secure_kafka: SecureKafka,
) -> None:
    stray = Leader(secure_kafka.bootstrap, topics=secure_kafka.topics, group_id="stray-leaders",
                   security=secure_kafka.security("leader"))
    with pytest.raises(AccessDenied, match="GroupAuthorizationFailed: principal leader may not "
                                           "READ group stray-leaders"):  # fmt: skip
        stray.run()


def test_a_wrong_password_is_refused_by_name(secure_kafka: SecureKafka) -> None:
    wrong: KafkaSecurity = replace(secure_kafka.security("client"), password="not-the-password")
    with (MetadataClient(secure_kafka.bootstrap, catalog="c", actor="alice", timeout=5.0,
                         topics=secure_kafka.topics, security=wrong) as client,
          pytest.raises(AccessDenied, match="AuthenticationFailed: principal client may not "
                                            "sign in")):  # fmt: skip
        client.reload()


def test_client_leader_follower_and_projector_do_their_whole_job(
    secure_kafka: SecureKafka,
) -> None:
    catalog = f"c{uuid.uuid4().hex[:8]}"
    topics = secure_kafka.topics
    with (
        Leader(secure_kafka.bootstrap, topics=topics,
               security=secure_kafka.security("leader")) as leader,
        MetadataClient(secure_kafka.bootstrap, catalog=catalog, actor="alice", topics=topics,
                       timeout=30.0, security=secure_kafka.security("client")) as client,
        Follower(secure_kafka.bootstrap, catalog, topics=topics,
                 security=secure_kafka.security("follower")) as follower,
    ):  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        committed = client.create_table("public", "orders", COLUMNS)
        image = follower.wait_for(committed.resource_version, timeout=30.0)
        with pytest.raises(AccessDenied, match=f"principal client may not READ {topics.events}"):
            client.image()  # the client may write commands, not read the log
    assert image.head.table_by_name("public", "orders") is not None
    partition = leader.layout.catalog_partition(catalog)
    read = read_events(secure_kafka.bootstrap, topics.events, partition,
                       secure_kafka.security("projector"))  # fmt: skip
    assert [e.resource_version for e in read if e.catalog == catalog][-1] == (
        committed.resource_version)
