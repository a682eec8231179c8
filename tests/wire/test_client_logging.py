"""What librdkafka's log lines become through metalog's Kafka logger."""

from __future__ import annotations

import logging

import pytest

from projector.kafka.clients import KAFKA_LOG


def _librdkafka(level: int, facility: str, line: str) -> None:
    """Log as confluent-kafka hands a librdkafka line to a Python logger."""
    KAFKA_LOG.log(level, "%s [%s] %s", facility, "rdkafka#producer-7", line)


def test_a_retry_notice_is_left_out_and_a_fault_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=KAFKA_LOG.name):
        _librdkafka(logging.WARNING, "GETPID", "[thrd:main]: Failed to acquire transactional "
                    "PID from broker TxnCoordinator/1: Broker: Coordinator load in progress: "
                    "retrying")  # fmt: skip
        _librdkafka(logging.ERROR, "FAIL", "[thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: "
                    "Connect to ipv4#127.0.0.1:1 failed: Connection refused")  # fmt: skip
    assert [r.getMessage().split(" ")[0] for r in caplog.records] == ["FAIL"]
