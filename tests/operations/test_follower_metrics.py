"""A real follower's /metrics and /readyz: applied position, lag at 0 when caught up and
growing once it stops reading, watches, apply times."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from events.values import Column
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from projector.follower.follower import Follower
from projector.follower.metrics import FollowerMetrics, liveness, readiness
from projector.telemetry import MetricsServer
from tests.fixtures.kafka import TopicSet
from tests.operations.scrape import get, scrape, value

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


def test_lag_is_zero_when_caught_up_and_rises_when_the_follower_stops_reading(
    wire: TopicSet, leader: Leader
) -> None:
    registry = CollectorRegistry()
    follower = Follower(wire.bootstrap, "greptime", topics=wire.topics,
                        metrics=FollowerMetrics(registry))  # fmt: skip
    with (
        MetadataClient(wire.bootstrap, catalog="greptime", actor="alice",
                       topics=wire.topics) as client,
        MetricsServer(registry, 0, ready=lambda: readiness(follower),
                      live=lambda: liveness(follower)) as server,
    ):  # fmt: skip
        for name in ("a", "b", "c"):
            client.create_table("public", name, COLUMNS)
        follower.start()
        try:
            watch = follower.watch(lambda change: None, 0)
            assert follower.wait_caught_up(30.0)
            at = follower.current().resource_version
            families = scrape(server.url)
            assert value(families, "metalog_follower_resource_version", catalog="greptime") == at
            assert value(families, "metalog_follower_lag_records", catalog="greptime") == 0
            assert value(families, "metalog_follower_lag_seconds", catalog="greptime") == 0
            assert value(families, "metalog_follower_events_applied_total") == at
            assert value(families, "metalog_follower_apply_duration_seconds_count") >= 1
            assert value(families, "metalog_follower_watches") == 1
            assert value(families, "metalog_follower_up") == 1
            assert get(f"{server.url}/readyz")[0] == 200
            watch.cancel()
            assert value(scrape(server.url), "metalog_follower_watches") == 0
        finally:
            follower.stop()

        for name in ("d", "e", "f"):  # committed while the follower reads nothing
            client.create_table("public", name, COLUMNS)

        families = scrape(server.url)
        assert value(families, "metalog_follower_lag_records", catalog="greptime") >= 3
        assert value(families, "metalog_follower_lag_seconds", catalog="greptime") > 0
        assert value(families, "metalog_follower_resource_version", catalog="greptime") == at
        assert value(families, "metalog_follower_up") == 0
        status, body = get(f"{server.url}/readyz")
        assert status == 503, body
