"""Configuration of the local single-node KRaft broker and the files it is run from."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from metalog.errors import StackError

# Fixed, uncommon defaults (never random ports): the usual 9092/9093 are often
# taken by another Kafka on a developer machine.
DEFAULT_PORT = 19092
DEFAULT_PARTITIONS = 3
DEFAULT_HEAP = "512m"
DEFAULT_PREFIX = "metalog"
# A transaction left open by a killed client blocks read_committed readers until
# it times out; the leader uses short transactions, so 60 s is a generous cap.
TRANSACTION_MAX_TIMEOUT_MS = 60_000


_PORTS = (1, 65535)
_PARTITIONS = (1, 10_000)


def _env_int(name: str, default: int, allowed: tuple[int, int]) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    least, most = allowed
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not least <= value <= most:
        raise StackError(
            f"{name}={raw!r} is not allowed: set it to an integer from {least} to {most}, "
            "or unset it for the default"
        )
    return value


@dataclass(frozen=True)
class StackConfig:
    """Where and how the local broker runs.

    Attributes:
        state_dir: holds server.properties, the data (``kraft/``), logs and the pid file.
        port: the client (PLAINTEXT) port on 127.0.0.1.
        controller_port: the KRaft controller port; stored in the data at format time.
        heap: the JVM heap (``-Xmx``), e.g. ``512m``.
        topic_prefix: prefix of the four metalog topics.
        partitions: partition count of the metalog topics when they are created.
        secure: SASL_SSL, principals and ACLs on the client listener (`metalog.stack.secure`).
    """

    state_dir: Path
    port: int = DEFAULT_PORT
    controller_port: int = DEFAULT_PORT + 1
    heap: str = DEFAULT_HEAP
    topic_prefix: str = DEFAULT_PREFIX
    partitions: int = DEFAULT_PARTITIONS
    secure: bool = False

    @classmethod
    def from_env(cls, **overrides: Any) -> StackConfig:
        """Build the config from ``METALOG_*`` environment variables, then ``overrides``.

        Variables: ``METALOG_STATE_DIR`` (default ``.metalog``), ``METALOG_PORT``
        (19092), ``METALOG_CONTROLLER_PORT`` (port + 1), ``METALOG_BROKER_HEAP``
        (512m), ``METALOG_TOPIC_PREFIX`` (metalog), ``METALOG_PARTITIONS`` (3).

        Raises:
            StackError: A port is not an integer from 1 to 65535, or the partitions
                not one from 1 to 10000.
        """
        port = _env_int("METALOG_PORT", DEFAULT_PORT, _PORTS)
        config = cls(
            state_dir=Path(os.environ.get("METALOG_STATE_DIR") or ".metalog").absolute(),
            port=port,
            controller_port=_env_int("METALOG_CONTROLLER_PORT", port + 1, _PORTS),
            heap=os.environ.get("METALOG_BROKER_HEAP") or DEFAULT_HEAP,
            topic_prefix=os.environ.get("METALOG_TOPIC_PREFIX") or DEFAULT_PREFIX,
            partitions=_env_int("METALOG_PARTITIONS", DEFAULT_PARTITIONS, _PARTITIONS),
        )
        return replace(config, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def bootstrap(self) -> str:
        """The client address, ``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        """The Kafka ``log.dirs`` directory (the metadata log and the topics' data)."""
        return self.state_dir / "kraft"

    @property
    def properties_file(self) -> Path:
        """The broker's server.properties."""
        return self.state_dir / "server.properties"

    @property
    def log4j_file(self) -> Path:
        """The broker's log4j2 configuration."""
        return self.state_dir / "log4j2.properties"

    @property
    def gc_log(self) -> Path:
        """The broker JVM's stop-the-world pauses (GC and other safepoints)."""
        return self.state_dir / "logs" / "gc.log"

    @property
    def pid_file(self) -> Path:
        """The pid of the running broker JVM."""
        return self.state_dir / "broker.pid"

    @property
    def console_log(self) -> Path:
        """The JVM's stdout and stderr."""
        return self.state_dir / "broker.out"

    @property
    def server_log(self) -> Path:
        """The broker's log4j log."""
        return self.state_dir / "logs" / "server.log"


def server_properties(config: StackConfig, overrides: dict[str, str] | None = None) -> str:
    """The server.properties of a single-node combined broker+controller, with `overrides`."""
    host = "127.0.0.1"
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"{host}:{config.controller_port}",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://{host}:{config.port},CONTROLLER://{host}:{config.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{config.port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(config.data_dir),
        "num.partitions": str(config.partitions),
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "3",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "transaction.max.timeout.ms": str(TRANSACTION_MAX_TIMEOUT_MS),
        # Abort a transaction left open by a killed client soon after it times out.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "5000",
        "log.retention.check.interval.ms": "60000",
    }
    props.update(overrides or {})
    lines = ["# Written by metalog.stack.broker on every `up`; edit StackConfig instead."]
    lines += [f"{key}={value}" for key, value in props.items()]
    return "\n".join(lines) + "\n"


def log4j2_properties(config: StackConfig) -> str:
    """A log4j2 configuration writing the broker log to the state directory."""
    log = config.server_log
    return "\n".join([
        "status = warn",
        "appender.file.type = RollingFile",
        "appender.file.name = FILE",
        f"appender.file.fileName = {log}",
        f"appender.file.filePattern = {log}.%i",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "appender.file.policies.type = Policies",
        "appender.file.policies.size.type = SizeBasedTriggeringPolicy",
        "appender.file.policies.size.size = 20MB",
        "appender.file.strategy.type = DefaultRolloverStrategy",
        "appender.file.strategy.max = 3",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = FILE",
        # Per-request logs are noise for a local broker.
        "logger.request.name = kafka.request.logger",
        "logger.request.level = WARN",
        "",
    ])
