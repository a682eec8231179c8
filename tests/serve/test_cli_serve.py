"""`metalog serve` fails in one line, without a traceback: no broker, a taken port."""

from __future__ import annotations

import socket

import pytest

from metalog.cli import main
from tests.fixtures.kafka import TopicSet


def test_a_missing_broker_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listens at the bootstrap address: exit 69 and one `metalog: error:` line."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]  # bound, never listening: connections are refused
        code = main(["serve", "--bootstrap", f"127.0.0.1:{free}", "--port", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 69
    assert err[-1].startswith("metalog: error: the Kafka cluster at") and "Traceback" not in err


@pytest.mark.integration
def test_a_taken_port_is_one_line(wire: TopicSet, capsys: pytest.CaptureFixture[str]) -> None:
    """The port is in use: exit 1 and a line naming the address and the fix."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code = main(["serve", "--bootstrap", wire.bootstrap, "--prefix", wire.prefix,
                     "--port", str(port)])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err == [f"metalog: error: cannot listen on 127.0.0.1:{port}: Address already in use: "
                   "stop what uses it or pick another --port"]  # fmt: skip
