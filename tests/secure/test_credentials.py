"""Credentials files and the settings built from them (pure: no broker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from projector.errors import AccessDenied, CredentialsError
from projector.kafka.security import (
    PLAINTEXT,
    KafkaSecurity,
    access_error,
    load_credentials,
    secured,
    security_for,
)
from tests.stack.test_cli_errors import metalog

STACK_FILE = {
    "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "ca_file": "/ca.pem",
    "principals": {"leader": {"username": "svc-leader", "password": "p1"},
                   "client": {"username": "app", "password": "p2"}},
}  # fmt: skip


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps(data))
    return path


def test_a_role_signs_in_as_its_principal_of_the_file(tmp_path: Path) -> None:
    security = load_credentials(_write(tmp_path, STACK_FILE), "leader")
    assert security == KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "svc-leader", "p1", "/ca.pem")
    assert secured({"bootstrap.servers": "h:1"}, security) | {"error_cb": None} == {
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "svc-leader", "sasl.password": "p1",
        "ssl.ca.location": "/ca.pem", "error_cb": None}  # fmt: skip
    assert "p1" not in repr(security)


def test_a_single_principal_file_serves_every_role(tmp_path: Path) -> None:
    path = _write(tmp_path, {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                             "username": "svc", "password": "pw"})  # fmt: skip
    for role in ("leader", "client", "follower", "projector"):
        assert load_credentials(path, role) == KafkaSecurity("SASL_PLAINTEXT", "PLAIN", "svc",
                                                             "pw")  # fmt: skip


def test_a_role_the_file_does_not_name_is_a_credentials_error(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match="names no principal for the follower role"):
        load_credentials(_write(tmp_path, STACK_FILE), "follower")


def test_a_missing_or_malformed_file_is_a_credentials_error(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match="does not exist: pass the file"):
        load_credentials(tmp_path / "nope.json", "leader")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CredentialsError, match="cannot read the credentials file"):
        load_credentials(tmp_path / "bad.json", "leader")


def test_without_a_file_every_client_is_plaintext(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METALOG_CREDENTIALS", raising=False)
    assert security_for("leader") is PLAINTEXT
    assert secured({"bootstrap.servers": "h:1"}, PLAINTEXT) == {
        "bootstrap.servers": "h:1", "security.protocol": "PLAINTEXT"}


def test_the_spark_options_carry_the_same_principal(tmp_path: Path) -> None:
    options = load_credentials(_write(tmp_path, STACK_FILE), "client").spark_options()
    assert options == {
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                  'required username="app" password="p2";',
        "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": "/ca.pem"}


@pytest.mark.parametrize("command", ["show", "leader", "sql"])
def test_a_command_with_a_missing_credentials_file_prints_one_line(
    command: str, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.json"
    args = [command, "--bootstrap", "127.0.0.1:1", "--credentials", str(missing)]
    run = metalog(*args, *(["SELECT 1"] if command == "sql" else []))
    assert run.code == 78
    assert run.one_line.startswith(f"metalog: error: the credentials file {missing} does not "
                                   "exist")  # fmt: skip


def test_the_credentials_variable_is_the_default(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    run = metalog("show", "--bootstrap", "127.0.0.1:1", METALOG_CREDENTIALS=str(missing))
    assert run.code == 78 and str(missing) in run.one_line


def test_a_refused_sign_in_is_told_by_the_clients_that_heard_it_only() -> None:
    """The refusal librdkafka reports to a client's ``error_cb`` is state of that
    principal's settings, not of the process: another client's equal settings do not
    see it, and an unanswered request of the first is told as the refusal."""
    heard = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "follower", "wrong")
    other = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "follower", "wrong")
    secured({"bootstrap.servers": "h:1"}, heard)["error_cb"](
        KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED, "Authentication failed: bad password"))
    unanswered = KafkaError(KafkaError._TRANSPORT)
    denied = access_error(unanswered, heard, "READ metalog.events")
    assert isinstance(denied, AccessDenied) and "bad password" in str(denied)
    assert access_error(unanswered, other, "READ metalog.events") is None
    assert heard == other and hash(heard) == hash(other)
