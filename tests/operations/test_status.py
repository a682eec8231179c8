"""`metalog status --metrics`: a real leader and follower seen through their own /metrics;
an endpoint that does not answer is reported, not a traceback."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry
from rich.console import Console

from events.values import Column
from metalog.cli import main
from metalog.cli.status import quantile
from metalog.demo.metrics import report
from producers.client.client import MetadataClient
from producers.leader.health import liveness as leader_liveness
from producers.leader.health import readiness as leader_readiness
from producers.leader.leader import Leader
from producers.leader.metrics import LeaderMetrics
from projector.follower.follower import Follower
from projector.follower.metrics import FollowerMetrics
from projector.follower.metrics import liveness as follower_liveness
from projector.follower.metrics import readiness as follower_readiness
from projector.telemetry import MetricsServer
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import wait_until
from tests.operations.scrape import free_port, scrape, value

COLUMNS = (Column(name="id", data_type="int64"),)


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METALOG_STATE_DIR", str(tmp_path))  # no broker of ours there


def test_quantile_reads_a_cumulative_histogram_as_prometheus_does() -> None:
    buckets = [(0.01, 50.0), (0.1, 90.0), (1.0, 100.0), (math.inf, 100.0)]
    assert quantile(0.5, buckets) == 0.01
    assert quantile(0.99, buckets) == pytest.approx(0.1 + 0.9 * 0.9)
    assert quantile(0.99, [(0.5, 1.0), (math.inf, 2.0)]) == 0.5  # past the last bound
    assert math.isnan(quantile(0.99, [(0.5, 0.0), (math.inf, 0.0)]))


def test_a_malformed_endpoint_is_a_typed_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--metrics", "http://host:"]) == 1
    err = capsys.readouterr().err
    assert "is not a metrics endpoint" in err and "HOST:PORT" in err
    assert "Traceback" not in err


@dataclass(frozen=True)
class Running:
    """A leader and a follower serving their metrics, after three committed commands."""

    leader_url: str
    follower_url: str
    last: int


@pytest.fixture
def running(wire: TopicSet) -> Iterator[Running]:
    """A real leader and follower on the test's topics, each with its metrics served."""
    leading, following = CollectorRegistry(), CollectorRegistry()
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                    metrics=LeaderMetrics(leading))  # fmt: skip
    follower = Follower(wire.bootstrap, "greptime", topics=wire.topics,
                        metrics=FollowerMetrics(following))  # fmt: skip
    with (
        leader,
        MetricsServer(leading, 0, ready=lambda: leader_readiness(leader),
                      live=lambda: leader_liveness(leader)) as leads,
        follower,
        MetricsServer(following, 0, ready=lambda: follower_readiness(follower),
                      live=lambda: follower_liveness(follower)) as follows,
    ):  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        with MetadataClient(wire.bootstrap, catalog="greptime", actor="alice",
                            topics=wire.topics) as client:  # fmt: skip
            for name in ("a", "b", "c"):
                last = client.create_table("public", name, COLUMNS).resource_version
        follower.wait_for(last, timeout=30.0)
        # Lag is 0 once it read the partition's end (the marker after the last event);
        # the leader counts a command in its commit thread, after the reply went out.
        wait_until(lambda: value(scrape(follows.url), "metalog_follower_lag_records") == 0)
        wait_until(lambda: value(scrape(leads.url), "metalog_leader_commands_total") == 3)
        yield Running(leads.url, follows.url, last)


@pytest.mark.integration
def test_status_shows_the_leader_and_the_follower_from_their_metrics(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    leads, follows, last = running.leader_url, running.follower_url, running.last
    nobody = f"127.0.0.1:{free_port()}"  # nothing listens there
    port = leads.rsplit(":", 1)[1]

    assert main(["status", "--json", "--metrics", leads, follows, nobody]) == 0
    document = json.loads(capsys.readouterr().out)
    assert main(["status", "--metrics", port, follows, nobody]) == 0
    view = capsys.readouterr().out

    assert document["running"] is False  # the broker part is still there
    seen = {p["url"]: p for p in document["processes"]}
    lead = seen[leads]
    assert lead["reachable"] and lead["ready"] and "owns partitions [0]" in lead["readiness"]
    assert lead["leader"]["partitions_owned"] == 1
    assert lead["leader"]["commands"] == 3 and lead["leader"]["rejected"] == 0
    assert lead["leader"]["commits"] >= 3
    assert lead["leader"]["commit_p99_seconds"] > 0
    assert "follower" not in lead
    follow = seen[follows]
    assert follow["ready"] and follow["follower"]["up"]
    assert follow["follower"]["catalogs"]["greptime"] == {
        "resource_version": last, "lag_records": 0, "lag_seconds": 0}
    dead = seen[f"http://{nobody}"]
    assert dead["reachable"] is False and "cannot connect" in dead["error"]

    assert "broker: stopped" in view
    assert f"{leads}  ready: owns partitions [0]" in view
    assert "1 partition(s) owned; commit p99" in view
    assert f"greptime rv {last} lag 0 records / 0.0 s" in view
    assert f"http://{nobody}  UNREACHABLE: cannot connect" in view


@pytest.mark.integration
def test_the_demo_ends_with_the_lag_and_commit_p99_it_scraped(running: Running) -> None:
    console = Console(record=True, width=200)

    report(console, "greptime", running.leader_url, running.follower_url)

    text = console.export_text()
    assert f"leader {running.leader_url}/metrics: commit p99 " in text
    assert " ms over " in text and "3 commands, 0 rejected" in text
    assert (f"follower {running.follower_url}/metrics: lag 0 records / 0.0 s at "
            f"resource_version {running.last}") in text
