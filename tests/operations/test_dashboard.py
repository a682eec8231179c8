"""The Grafana dashboard and docs/operations.md name only metrics the code registers."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry

from producers.leader.metrics import LeaderMetrics
from projector.follower.metrics import FollowerMetrics
from server.metrics import ServerMetrics
from streaming.metrics import ProjectionMetrics

DOCS = Path(__file__).resolve().parents[2] / "docs"
NAME = re.compile(r"metalog_[a-z_]+")


def _registered() -> set[str]:
    registry = CollectorRegistry()
    LeaderMetrics(registry)
    follower = FollowerMetrics(registry)
    ProjectionMetrics(registry)
    served = ServerMetrics().registry  # its own: it holds a FollowerMetrics too
    families = [*registry.collect(), *served.collect()]
    names = {sample for family in families for sample in _samples(family.name)}
    names |= {
        "metalog_follower_resource_version", "metalog_follower_lag_records",
        "metalog_follower_lag_seconds", "metalog_follower_events_applied_total",
        "metalog_follower_sequence_gaps_total", "metalog_follower_watches",
        "metalog_follower_up",
    }  # read from a bound follower at scrape time (tests/operations/test_follower_metrics.py)
    names |= {
        "metalog_projection_freshness_seconds", "metalog_projection_compaction_lag_batches",
        "metalog_projection_compaction_age_seconds", "metalog_projection_up",
    }  # read from a bound projection at scrape time (tests/spark/test_metrics.py)
    assert follower.registry is registry
    return names


def _samples(family: str) -> set[str]:
    return {family, f"{family}_total", f"{family}_bucket", f"{family}_count", f"{family}_sum"}


def test_every_metric_the_dashboard_plots_is_registered() -> None:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in NAME.findall(expr)}

    assert used
    assert used <= _registered()


def test_every_metric_in_the_docs_table_is_registered() -> None:
    text = (DOCS / "operations.md").read_text()
    table = text.split("### Metrics", 1)[1].split("### Alerts", 1)[0]
    documented = {m for m in NAME.findall(table) if m != "metalog_" and not m.endswith("_")}

    assert documented <= _registered()
