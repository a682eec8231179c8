"""The local stack's lifecycle, on its own state directory and ports.

The session's ``kafka`` fixture may itself be a local stack (ports 19192/19193);
this module runs a second broker so it can stop and restart it, on the first
free pair of a fixed list of ports (other brokers may run on this machine).
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from metalog.cli import main
from metalog.errors import StackError
from metalog.stack import broker as stack
from metalog.stack.config import StackConfig
from projector.kafka.topics import (
    create_topics,
    describe_topic_config,
    list_topics,
    metalog_topic_configs,
)

LIFECYCLE_PORTS = (19392, 19492, 19592, 19692, 19792, 19892)


def _free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def own_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackConfig]:
    port = next(p for p in LIFECYCLE_PORTS if _free(p) and _free(p + 1))
    config = StackConfig(state_dir=tmp_path_factory.mktemp("stack"), port=port,
                         controller_port=port + 1, partitions=2)
    try:
        yield config
    finally:
        stack.down(config)


def _consume_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(60):
            msg = consumer.poll(1.0)
            value = msg.value() if msg is not None and msg.error() is None else None
            if value is not None:
                values.append(value)
            if len(values) >= expected:
                break
    finally:
        consumer.close()
    return values


@pytest.mark.integration
def test_up_twice_is_harmless_and_status_reports_running(own_stack: StackConfig) -> None:
    first = stack.up(own_stack)
    second = stack.up(own_stack)
    assert first["started"] is True
    assert second["started"] is False
    assert second["pid"] == first["pid"]
    assert stack.status(own_stack) == {"running": True, "ready": True,
                                       "bootstrap": own_stack.bootstrap, "pid": first["pid"],
                                       "state_dir": str(own_stack.state_dir)}
    listed = list_topics(own_stack.bootstrap)
    assert {name: listed[name] for name in metalog_topic_configs("metalog")} == {
        "metalog.commands": 2, "metalog.events": 2, "metalog.replies": 2, "metalog.dlq": 2}
    assert describe_topic_config(own_stack.bootstrap, "metalog.events")["retention.ms"] == "-1"
    assert "Using The Z Garbage Collector" in own_stack.gc_log.read_text()  # logged from the start


@pytest.mark.integration
def test_a_record_survives_down_and_up(own_stack: StackConfig) -> None:
    stack.up(own_stack)
    create_topics(own_stack.bootstrap, ["survivor"], partitions=1)
    producer = Producer({"bootstrap.servers": own_stack.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    producer.produce("survivor", b"kept across restarts")
    assert producer.flush(30) == 0
    del producer  # no client left retrying against the stopped broker

    assert stack.down(own_stack) is True
    assert stack.status(own_stack)["running"] is False
    assert not own_stack.pid_file.exists()
    assert stack.down(own_stack) is False

    assert stack.up(own_stack)["started"] is True
    assert _consume_all(own_stack.bootstrap, "survivor", 1) == [b"kept across restarts"]


@pytest.mark.integration
def test_cli_status_json(own_stack: StackConfig, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    stack.up(own_stack)
    monkeypatch.setenv("METALOG_STATE_DIR", str(own_stack.state_dir))
    monkeypatch.setenv("METALOG_PORT", str(own_stack.port))
    assert main(["status", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["running"] is True
    assert report["bootstrap"] == own_stack.bootstrap


def test_up_refuses_a_port_taken_by_another_process(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = StackConfig(state_dir=tmp_path, port=port, controller_port=port + 1)
        with pytest.raises(StackError, match=f"port {port} is already in use"):
            stack.up(config)


def test_cli_without_a_command_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: metalog" in capsys.readouterr().err
