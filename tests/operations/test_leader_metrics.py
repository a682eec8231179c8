"""A real leader's /metrics and /readyz, scraped during a workload on a real broker."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, VersionConflict
from producers.leader.health import liveness, readiness
from producers.leader.leader import Leader
from producers.leader.metrics import LeaderMetrics
from producers.leader.owner import LeaderOptions, PartitionOwner
from projector.telemetry import MetricsServer
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import wait_until
from tests.operations.scrape import get, scrape, value

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


@pytest.fixture
def served(wire: TopicSet) -> Iterator[tuple[Leader, MetricsServer]]:
    """A leader counting into its own registry, served on a free port."""
    registry = CollectorRegistry()
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                    metrics=LeaderMetrics(registry))  # fmt: skip
    server = MetricsServer(registry, 0, ready=lambda: readiness(leader),
                           live=lambda: liveness(leader))  # fmt: skip
    with server, leader:
        assert leader.wait_until_serving(1, timeout=60.0), "the leader never owned its partition"
        yield leader, server


def test_commands_are_counted_by_kind_and_outcome_exactly(
    wire: TopicSet, served: tuple[Leader, MetricsServer]
) -> None:
    _, server = served
    with MetadataClient(wire.bootstrap, catalog="greptime", actor="alice",
                        topics=wire.topics) as client:  # fmt: skip
        client.create_table("public", "a", COLUMNS)
        client.create_table("public", "b", COLUMNS)
        client.alter_table("public", "a", set_options={"ttl": "1d"}, expected_version=1)
        with pytest.raises(VersionConflict):
            client.alter_table("public", "a", set_options={"ttl": "2d"}, expected_version=1)
        with pytest.raises(VersionConflict):
            client.rename_table("public", "b", "c", expected_version=5)

    def counted() -> float:  # the commit thread counts right after the commit returns
        return value(scrape(server.url), "metalog_leader_commands_total")

    wait_until(lambda: counted() == 5)
    families = scrape(server.url)
    total = "metalog_leader_commands_total"
    assert value(families, total, kind="CreateTable", outcome="committed") == 2
    assert value(families, total, kind="AlterTable", outcome="committed") == 1
    assert value(families, total, kind="AlterTable", outcome="VersionConflict") == 1
    assert value(families, total, kind="RenameTable", outcome="VersionConflict") == 1
    assert value(families, total, outcome="VersionConflict") == 2
    assert value(families, "metalog_leader_decide_duration_seconds_count") == 5
    assert value(families, "metalog_leader_reply_duration_seconds_count") == 5
    assert value(families, "metalog_leader_batch_commands_sum") == 5
    assert value(families, "metalog_leader_commit_duration_seconds_count") >= 5  # + LeaderElected
    assert value(families, "metalog_leader_partitions_owned") == 1
    assert value(families, "metalog_leader_partition_changes_total", change="assigned") == 1
    assert value(families, "metalog_leader_commit_failures_total") == 0
    assert "metalog_leader_snapshot_age_seconds" in families
    assert "metalog_leader_checkpoints_signed" in families


def test_a_leader_without_partitions_is_not_ready(
    wire: TopicSet, served: tuple[Leader, MetricsServer]
) -> None:
    _, server = served
    assert get(f"{server.url}/readyz")[0] == 200
    registry = CollectorRegistry()
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                metrics=LeaderMetrics(registry)) as idle:  # fmt: skip
        # One partition, already owned: the second member of the group gets none.
        ready, why = readiness(idle)
        assert not ready
        assert "owns no partition" in why
        assert liveness(idle)[0]
        with MetricsServer(registry, 0, ready=lambda: readiness(idle)) as second:
            status, body = get(f"{second.url}/readyz")
            assert status == 503, body
            assert value(scrape(second.url), "metalog_leader_partitions_owned") == 0


class _Watched(LeaderMetrics):
    """A leader's metrics that also note its health when it starts to rejoin its group."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self.url = ""
        self.at_rejoin: list[tuple[tuple[int, str], tuple[int, str]]] = []

    def rejoined(self, cause: BaseException) -> None:
        super().rejoined(cause)  # its partitions are handed back by now, its back-off ahead
        self.at_rejoin.append((get(f"{self.url}/readyz"), get(f"{self.url}/healthz")))


def test_a_fenced_leader_is_alive_not_ready_until_it_owns_its_partition_again_and_is_counted(
    wire: TopicSet,
) -> None:
    registry = CollectorRegistry()
    metrics = _Watched(registry)
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                    metrics=metrics)  # fmt: skip
    server = MetricsServer(registry, 0, ready=lambda: readiness(leader),
                           live=lambda: liveness(leader))  # fmt: skip
    with server, leader, MetadataClient.embedded(leader, catalog="greptime",
                                                  actor="svc") as client:  # fmt: skip
        metrics.url = server.url  # its port is picked when it starts
        assert leader.wait_until_serving(1, timeout=60.0)
        client.create_table("public", "t", COLUMNS)
        assert get(f"{server.url}/readyz")[0] == 200
        usurper = PartitionOwner(wire.bootstrap, wire.topics, 0, "usurper", LeaderOptions())
        usurper.open()
        try:
            with pytest.raises(CommandOutcomeUnknown):
                client.alter_table("public", "t", set_options={"ttl": "1d"}, timeout=8.0)
            wait_until(lambda: len(metrics.at_rejoin) == 1 and leader.owned == [0], timeout=60.0)
        finally:
            usurper.close()
        client.alter_table("public", "t", set_options={"ttl": "2d"})
        ready, live = get(f"{server.url}/readyz"), get(f"{server.url}/healthz")
        families = scrape(server.url)

    (ready_then, why), (live_then, _) = metrics.at_rejoin[0]
    assert ready_then == 503 and "again after Fenced" in why
    assert live_then == 200
    assert ready[0] == 200 and live[0] == 200
    assert leader.failure is None
    assert value(families, "metalog_leader_commit_failures_total", error="Fenced") == 1
    assert value(families, "metalog_leader_rejoins_total", error="Fenced") == 1
    assert value(families, "metalog_leader_partition_changes_total", change="assigned") == 2


def test_metalog_leader_serves_its_metrics_on_the_port_given(wire: TopicSet) -> None:
    with socket.socket() as probe:  # a port free now, released for the leader to take
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", wire.bootstrap,
         "--prefix", wire.prefix, "--group", f"{wire.prefix}-leaders",
         "--metrics-port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _status(f"{url}/readyz") == 200, timeout=60.0)
        families = scrape(url)
        assert value(families, "metalog_leader_partitions_owned") == 1
        assert "metalog_leader_commit_duration_seconds" in families
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30.0)


def _status(url: str) -> int:
    try:
        return get(url)[0]
    except OSError:  # not listening yet
        return 0
