"""The metrics endpoint: Prometheus text, health checks, a typed error for a taken port."""

from __future__ import annotations

import socket

import pytest
from prometheus_client import CollectorRegistry, Counter

from events.errors import MetalogError
from projector.errors import TelemetryError
from projector.telemetry import MetricsServer, respond
from tests.operations.scrape import get, scrape, value


def test_metrics_renders_the_given_registry_and_nothing_global() -> None:
    registry = CollectorRegistry()
    Counter("metalog_test_things_total", "things", ["kind"], registry=registry).labels("a").inc(3)

    with MetricsServer(registry, 0) as server:
        families = scrape(server.url)

    assert value(families, "metalog_test_things_total", kind="a") == 3
    assert "python_gc_objects_collected" not in families  # the process-wide default registry


def test_readyz_and_healthz_follow_their_checks() -> None:
    state = {"ready": False}
    ready = lambda: (state["ready"], "owns 1 partition" if state["ready"] else "owns none")  # noqa: E731

    with MetricsServer(CollectorRegistry(), 0, ready=ready,
                       live=lambda: (False, "stopped: fenced")) as server:  # fmt: skip
        assert get(f"{server.url}/readyz") == (503, "not ok: owns none\n")
        state["ready"] = True
        assert get(f"{server.url}/readyz") == (200, "ok: owns 1 partition\n")
        assert get(f"{server.url}/healthz") == (503, "not ok: stopped: fenced\n")
        assert get(f"{server.url}/nothing")[0] == 404


def test_a_check_that_raises_is_not_ready_and_says_why() -> None:
    def broken() -> tuple[bool, str]:
        raise RuntimeError("no state yet")

    response = respond("/readyz", CollectorRegistry(), ready=broken)

    assert response.status == 503
    assert b"RuntimeError: no state yet" in response.body


def test_a_taken_port_is_a_typed_error_naming_the_flag() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(TelemetryError, match="--metrics-port") as raised:
            MetricsServer(CollectorRegistry(), port).start()
    assert isinstance(raised.value, MetalogError)


def test_stop_closes_the_port() -> None:
    server = MetricsServer(CollectorRegistry(), 0).start()
    port = server.port
    server.stop()

    with socket.socket() as again:
        again.bind(("127.0.0.1", port))  # free again
