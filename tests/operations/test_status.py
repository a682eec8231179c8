"""`metalog status --metrics`: a real leader and follower seen through their own /metrics;
an endpoint that does not answer is reported, not a traceback."""

from __future__ import annotations

import json
import math

import pytest
from prometheus_client import CollectorRegistry

from events.values import Column
from metalog.cli import main
from metalog.status_view import quantile
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


@pytest.mark.integration
def test_status_shows_the_leader_and_the_follower_from_their_metrics(
    wire: TopicSet, capsys: pytest.CaptureFixture[str]
) -> None:
    leading, following = CollectorRegistry(), CollectorRegistry()
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                    metrics=LeaderMetrics(leading))  # fmt: skip
    follower = Follower(wire.bootstrap, "greptime", topics=wire.topics,
                        metrics=FollowerMetrics(following))  # fmt: skip
    nobody = f"127.0.0.1:{free_port()}"  # nothing listens there
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

        assert main(["status", "--json", "--metrics", leads.url, follows.url, nobody]) == 0
        document = json.loads(capsys.readouterr().out)
        assert main(["status", "--metrics", str(leads.port), follows.url, nobody]) == 0
        view = capsys.readouterr().out

    assert document["running"] is False  # the broker part is still there
    seen = {p["url"]: p for p in document["processes"]}
    lead = seen[leads.url]
    assert lead["reachable"] and lead["ready"] and "owns partitions [0]" in lead["readiness"]
    assert lead["leader"]["partitions_owned"] == 1
    assert lead["leader"]["commands"] == 3 and lead["leader"]["rejected"] == 0
    assert lead["leader"]["commits"] >= 3
    assert lead["leader"]["commit_p99_seconds"] > 0
    assert "follower" not in lead
    follow = seen[follows.url]
    assert follow["ready"] and follow["follower"]["up"]
    assert follow["follower"]["catalogs"]["greptime"] == {
        "resource_version": last, "lag_records": 0, "lag_seconds": 0}
    dead = seen[f"http://{nobody}"]
    assert dead["reachable"] is False and "cannot connect" in dead["error"]

    assert "broker: stopped" in view
    assert f"{leads.url}  ready: owns partitions [0]" in view
    assert "1 partition(s) owned; commit p99" in view
    assert f"greptime rv {last} lag 0 records / 0.0 s" in view
    assert f"http://{nobody}  UNREACHABLE: cannot connect" in view
