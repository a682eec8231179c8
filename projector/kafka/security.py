"""How every metalog Kafka client signs in: one `KafkaSecurity`, merged into each config.

A client config is built where the client is made (a consumer here, a
transactional producer in the leader…); `secured` adds the security settings
to it, as `CLIENT_SETTINGS` adds the logging, so a consumer, a producer and an
admin of one component all present the same principal. Credentials come from
a JSON file (`metalog up --secure` writes one, readable by its owner only):

    {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
     "ca_file": "/abs/ca.pem",
     "principals": {"leader": {"username": "leader", "password": "…"}, …}}

A file for a single principal holds ``"username"`` and ``"password"`` at the
top instead of ``"principals"``; every role then signs in as that user.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError

from projector.errors import AccessDenied, CredentialsError

CREDENTIALS_ENV = "METALOG_CREDENTIALS"
"""The environment variable naming a credentials file (the CLI's `--credentials` default)."""

ROLES = ("admin", "leader", "client", "follower", "projector")
"""The principals' roles: who creates topics and ACLs, writes the log, sends commands, reads."""


class SignIn:
    """The last refusal of a principal's sign-in that its clients heard from a broker.

    librdkafka only logs a refused sign-in and retries, so the request that could not
    be sent fails later as if the cluster were unreachable; each client of the
    principal reports the refusal here (its ``error_cb``), and `access_error` tells it.
    """

    __slots__ = ("refused",)

    def __init__(self) -> None:
        self.refused: str | None = None

    def note(self, error: KafkaError) -> None:
        """librdkafka's ``error_cb``: keep what a refused sign-in said."""
        if error.code() in _SIGN_IN_FAILED:
            self.refused = error.str()


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    """The security settings of one principal's Kafka clients.

    Attributes:
        protocol: ``security.protocol``: PLAINTEXT (no sign-in), SASL_SSL, SASL_PLAINTEXT, SSL.
        mechanism: the SASL mechanism, e.g. ``SCRAM-SHA-512``.
        username: the principal's name; None without SASL.
        password: its password (never shown by `repr`).
        ca_file: a PEM file of the CA that signed the brokers' certificates; None for the
            system's CAs.
        sign_in: what the brokers said of this principal's sign-in, as its clients heard it
            (`secured`); not part of the settings' value.
    """

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    sign_in: SignIn = field(default_factory=SignIn, repr=False, compare=False)

    @property
    def principal(self) -> str:
        """The name the broker knows this client by (``ANONYMOUS`` without SASL)."""
        return self.username or "ANONYMOUS"

    def client_config(self) -> dict[str, Any]:
        """The librdkafka settings: ``security.protocol``, ``sasl.*``, ``ssl.ca.location``."""
        config: dict[str, Any] = {"security.protocol": self.protocol}
        if self.mechanism:
            config["sasl.mechanism"] = self.mechanism
        if self.username is not None:
            config["sasl.username"] = self.username
            config["sasl.password"] = self.password or ""
        if self.ca_file:
            config["ssl.ca.location"] = self.ca_file
        return config

    def spark_options(self) -> dict[str, str]:
        """The Spark Kafka source's (and sink's) ``kafka.*`` options for this principal."""
        options = {"kafka.security.protocol": self.protocol}
        if self.mechanism:
            options["kafka.sasl.mechanism"] = self.mechanism
        if self.username is not None:
            module = _JAAS_MODULES.get((self.mechanism or "").split("-")[0], _JAAS_MODULES["PLAIN"])
            options["kafka.sasl.jaas.config"] = (
                f'{module} required username="{_jaas_quote(self.username)}" '
                f'password="{_jaas_quote(self.password or "")}";'
            )
        if self.ca_file:
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = self.ca_file
        return options


PLAINTEXT = KafkaSecurity()
"""No sign-in and no TLS: the local stack's default and every component's default."""

_JAAS_MODULES = {
    "SCRAM": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
}


def _jaas_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def secured(config: dict[str, Any], security: KafkaSecurity) -> dict[str, Any]:
    """``config`` with ``security``'s settings merged in (a new dict).

    A client that signs in also reports a refused sign-in (`access_error` then
    names it): librdkafka only logs it and retries, so the request that could
    not be sent fails later as if the cluster were unreachable.
    """
    merged = {**config, **security.client_config()}
    if security.username is not None:
        merged["error_cb"] = security.sign_in.note
    return merged


def load_credentials(path: str | Path, role: str) -> KafkaSecurity:
    """The security settings of `role`'s principal from a credentials file.

    Args:
        path: the JSON credentials file (module docstring).
        role: one of `ROLES`; a single-principal file serves every role.

    Raises:
        CredentialsError: The file is missing, unreadable or not such a file, or it
            holds no principal for `role`.
    """
    where = Path(path)
    try:
        data = json.loads(where.read_text())
    except FileNotFoundError:
        raise CredentialsError(
            f"the credentials file {where} does not exist: pass the file `metalog up --secure` "
            f"wrote (its state directory's credentials.json) with --credentials or "
            f"{CREDENTIALS_ENV}"
        ) from None
    except (OSError, ValueError) as exc:
        raise CredentialsError(
            f"cannot read the credentials file {where} ({exc}): it must be "
            "a JSON file readable by you"
        ) from None
    if not isinstance(data, dict):
        raise CredentialsError(f"the credentials file {where} is not a JSON object")
    principal = data.get("principals", {}).get(role) if "principals" in data else data
    if not isinstance(principal, dict) or "username" not in principal:
        raise CredentialsError(
            f"the credentials file {where} names no principal for the "
            f'{role} role: add one under "principals"'
        )
    return KafkaSecurity(
        protocol=str(data.get("security_protocol", "SASL_SSL")),
        mechanism=str(data.get("sasl_mechanism", "SCRAM-SHA-512")),
        username=str(principal["username"]),
        password=str(principal.get("password", "")),
        ca_file=data.get("ca_file"),
    )


def security_for(role: str, credentials: str | Path | None = None) -> KafkaSecurity:
    """`role`'s settings from `credentials`, else from ``METALOG_CREDENTIALS``, else PLAINTEXT.

    Raises:
        CredentialsError: The file named is missing, unreadable or holds no such principal.
    """
    path = credentials or os.environ.get(CREDENTIALS_ENV)
    return load_credentials(path, role) if path else PLAINTEXT


_DENIED: dict[int, str] = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationFailed",
    KafkaError.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationFailed",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationFailed",
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "TransactionalIdAuthorizationFailed",
    KafkaError.DELEGATION_TOKEN_AUTHORIZATION_FAILED: "DelegationTokenAuthorizationFailed",
}
"""librdkafka's authorization errors, by the name Kafka gives them."""

_SIGN_IN_FAILED = frozenset({KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION,
                             KafkaError._SSL})  # fmt: skip
_UNANSWERED = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                         KafkaError._TIMED_OUT})  # fmt: skip
"""How a request ends that could not be sent because the sign-in was refused."""


def access_error(
    error: KafkaError | None, security: KafkaSecurity, operation: str
) -> AccessDenied | None:
    """The `AccessDenied` that `error` stands for, or None if it is no refusal.

    Args:
        error: what librdkafka reported.
        security: the principal the client signed in as.
        operation: what it tried, e.g. ``WRITE metalog.events``.
    """
    if error is None:
        return None
    code = error.code()
    if code in _DENIED:
        return AccessDenied(
            _DENIED[code],
            security.principal,
            operation,
            "an admin must grant it (docs/security.md lists the ACLs)",
        )
    refused = error.str() if code in _SIGN_IN_FAILED else None
    if refused is None and code in _UNANSWERED:
        refused = security.sign_in.refused
    if refused is not None:
        return AccessDenied(
            "AuthenticationFailed",
            security.principal,
            f"sign in to {operation}",
            f"check the user name, password and CA file ({refused})",
        )
    return None
