"""`metalog up --secure`: principals, TLS and ACLs on the local broker.

On first use, `prepare` generates a password per principal (admin, leader,
client, follower, projector; names from ``METALOG_PRINCIPALS``), a CA and a
loopback broker certificate, and writes the credentials file (owner-only,
``credentials.json`` in the state directory). The broker's client listener is
SASL_SSL with SCRAM-SHA-512; the users are created at format time
(`scram_arguments`); the KRaft `StandardAuthorizer` denies what no ACL allows.
After start, the admin principal creates the ACLs (`grant`, docs/security.md).
The PLAINTEXT controller listener, on 127.0.0.1 only, is `User:ANONYMOUS`,
which the broker itself uses to reach the controller: it is a super user.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from events.topics import Topics
from metalog.errors import StackError
from metalog.stack.config import StackConfig
from metalog.stack.tls import write_certificates, write_owner_only
from projector.kafka.clients import CLIENT_SETTINGS, FOLLOWER_GROUP, READER_GROUP
from projector.kafka.security import ROLES, KafkaSecurity, load_credentials, secured

MECHANISM = "SCRAM-SHA-512"
PRINCIPALS_ENV = "METALOG_PRINCIPALS"
"""Renames principals: ``leader=svc-leader,client=app`` (roles not named keep their role name)."""


READER_GROUPS = f"{READER_GROUP}-"
"""The consumer groups of one-off log readers (`producers.leader.log.read_partition`)."""
FOLLOWER_GROUPS = f"{FOLLOWER_GROUP}-"
"""The consumer groups of followers and whole-log readers (`projector.kafka.partition`)."""
CLIENT_GROUPS = "client-"
"""The consumer groups of `MetadataClient`s: their default client ids."""
PROJECTOR_GROUPS = "spark-kafka-source-"
"""The consumer groups of Spark's Kafka source."""


def credentials_file(config: StackConfig) -> Path:
    """The owner-only credentials file of a secure stack."""
    return config.state_dir / "credentials.json"


def ca_file(config: StackConfig) -> Path:
    """The CA certificate clients trust (PEM)."""
    return config.state_dir / "tls" / "ca.pem"


def _broker_pem(config: StackConfig) -> Path:
    return config.state_dir / "tls" / "broker.pem"


def _usernames() -> dict[str, str]:
    names = {role: role for role in ROLES}
    for item in filter(None, (os.environ.get(PRINCIPALS_ENV) or "").split(",")):
        role, _, name = item.partition("=")
        if role.strip() not in names or not name.strip():
            raise StackError(f"{PRINCIPALS_ENV} item {item!r} is not `role=name` with a role "
                             f"of {', '.join(ROLES)}")
        names[role.strip()] = name.strip()
    return names


def check_mode(config: StackConfig) -> None:
    """Refuse to start a secure state directory plainly, or a plain one securely.

    Raises:
        StackError: The state directory was formatted in the other mode.
    """
    formatted = (config.data_dir / "meta.properties").exists()
    was_secure = credentials_file(config).exists()
    if formatted and was_secure and not config.secure:
        raise StackError(f"{config.state_dir} holds a secure stack: start it with "
                         "`metalog up --secure` (a plain start would open it to anyone)")
    if formatted and not was_secure and config.secure:
        raise StackError(f"{config.state_dir} was formatted without --secure, so it has no "
                         "users: use another METALOG_STATE_DIR or remove this one")


def prepare(config: StackConfig) -> None:
    """Write the certificates and the credentials file, once (a restart keeps them)."""
    config.state_dir.chmod(0o700)
    (config.state_dir / "tls").mkdir(exist_ok=True)
    if not _broker_pem(config).exists():
        write_certificates(ca_file(config), _broker_pem(config))
    if not credentials_file(config).exists():
        principals = {role: {"username": name, "password": secrets.token_urlsafe(24)}
                      for role, name in _usernames().items()}  # fmt: skip
        write_owner_only(credentials_file(config), json.dumps({
            "bootstrap": config.bootstrap, "security_protocol": "SASL_SSL",
            "sasl_mechanism": MECHANISM, "ca_file": str(ca_file(config)),
            "principals": principals}, indent=2).encode())  # fmt: skip


def security(config: StackConfig, role: str) -> KafkaSecurity:
    """`role`'s settings from the stack's credentials file."""
    return load_credentials(credentials_file(config), role)


def broker_properties(config: StackConfig) -> dict[str, str]:
    """The server.properties entries that make the client listener SASL_SSL with ACLs.

    The broker reaches itself (transaction markers) through the SASL_SSL listener
    as the admin principal, so the admin's password is in server.properties: the
    file is owner-only.
    """
    admin = security(config, "admin")
    host = "127.0.0.1"
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="{admin.username}" password="{admin.password}";')  # fmt: skip
    return {
        "listeners": f"SASL_SSL://{host}:{config.port},CONTROLLER://{host}:{config.controller_port}",
        "advertised.listeners": f"SASL_SSL://{host}:{config.port}",
        "inter.broker.listener.name": "SASL_SSL",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": MECHANISM,
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(_broker_pem(config)),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_file(config)),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": f"User:ANONYMOUS;User:{admin.username}",
    }


def scram_arguments(config: StackConfig) -> list[str]:
    """`StorageTool format` arguments creating every principal (its stdout shows their keys)."""
    data = json.loads(credentials_file(config).read_text())
    args: list[str] = []
    for principal in data["principals"].values():
        args += ["--add-scram",
                 f"{MECHANISM}=[name={principal['username']},password={principal['password']}]"]
    return args


@contextmanager
def argument_file(config: StackConfig, cmd: list[str]) -> Iterator[list[str]]:
    """`cmd` (``java …``) as ``java @FILE``, its arguments read from an owner-only file.

    The passwords of `scram_arguments` stay out of the process list (``ps`` shows
    every user a process's arguments); the file is deleted afterwards.
    """
    path = config.state_dir / "format.args"
    quoted = ('"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"' for arg in cmd[1:])
    write_owner_only(path, "\n".join(quoted).encode())
    try:
        yield [cmd[0], f"@{path}"]
    finally:
        path.unlink(missing_ok=True)


def acl_bindings(topics: Topics, names: dict[str, str]) -> list[AclBinding]:
    """The ACLs of the metalog principals (docs/security.md): what each may do, nothing more."""
    topic, group, txn = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    op = AclOperation
    # A consumer that assigns its partitions still looks up its group's coordinator
    # (librdkafka), so each reader also has READ on the groups its consumers are named
    # with; they commit nothing there.
    grants = [
        ("leader", topic, topics.commands, literal, op.READ),
        ("leader", group, f"{topics.prefix}-leaders", literal, op.READ),
        ("leader", group, READER_GROUPS, prefixed, op.READ),
        ("leader", txn, f"{topics.prefix}-leader-", prefixed, op.WRITE),
        ("leader", txn, f"{topics.prefix}-leader-", prefixed, op.DESCRIBE),
        ("leader", topic, topics.events, literal, op.WRITE),
        ("leader", topic, topics.events, literal, op.READ),
        ("leader", topic, topics.events, literal, op.DESCRIBE_CONFIGS),
        ("leader", topic, topics.replies, literal, op.WRITE),
        ("leader", topic, topics.dlq, literal, op.WRITE),
        ("client", topic, topics.commands, literal, op.WRITE),
        ("client", topic, topics.replies, literal, op.READ),
        ("client", group, CLIENT_GROUPS, prefixed, op.READ),
        # The partition count only (a client routes by it); no read, no write.
        ("client", topic, topics.events, literal, op.DESCRIBE),
        ("follower", topic, topics.events, literal, op.READ),
        ("follower", group, FOLLOWER_GROUPS, prefixed, op.READ),
        ("follower", group, READER_GROUPS, prefixed, op.READ),
        ("follower", topic, topics.dlq, literal, op.WRITE),
        ("projector", topic, topics.events, literal, op.READ),
        ("projector", group, PROJECTOR_GROUPS, prefixed, op.READ),
        ("projector", group, READER_GROUPS, prefixed, op.READ),
    ]
    return [AclBinding(kind, name, pattern, f"User:{names[role]}", "*", operation,
                       AclPermissionType.ALLOW)
            for role, kind, name, pattern, operation in grants]  # fmt: skip


def grant(config: StackConfig, timeout_s: float = 30.0) -> None:
    """Create the ACLs of the stack's topic prefix, as the admin principal (idempotent).

    Returns once the broker's authorizer applies them: a created ACL reaches it a
    moment after the controller commits it, and a client right after `up` must not
    be refused in between.

    Raises:
        StackError: The broker refused, or did not apply them within `timeout_s`.
    """
    data = json.loads(credentials_file(config).read_text())
    names = {role: p["username"] for role, p in data["principals"].items()}
    admin = AdminClient(secured({"bootstrap.servers": config.bootstrap, **CLIENT_SETTINGS},
                                security(config, "admin")))  # fmt: skip
    wanted = acl_bindings(Topics(config.topic_prefix), names)
    futures = admin.create_acls(wanted, request_timeout=timeout_s)
    for binding, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            raise StackError(f"could not create the ACL {binding}: {exc.args[0].str()}") from exc
    deadline = time.monotonic() + timeout_s
    while not set(wanted) <= set(admin.describe_acls(_EVERY_ACL, request_timeout=timeout_s)
                                 .result(timeout=timeout_s)):  # fmt: skip
        if time.monotonic() > deadline:
            raise StackError(f"the broker did not apply metalog's ACLs within {timeout_s:.0f} s")
        time.sleep(0.1)


# None matches any name, principal and host (confluent-kafka's docs; its stubs say str).
_ANY: Any = None
_EVERY_ACL = AclBindingFilter(ResourceType.ANY, _ANY, ResourcePatternType.ANY, _ANY, _ANY,
                              AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
