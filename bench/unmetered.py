"""A leader's and a follower's metrics off: collectors that record nothing (`bench.metrics_cost`).

The bench's "off" mode: the same `Leader` and `Follower`, their Prometheus
collectors replaced so that no histogram, counter or per-command loop runs.
"""

from __future__ import annotations

from prometheus_client.metrics import MetricWrapperBase

from producers.leader.committer import Batch
from producers.leader.metrics import LeaderMetrics
from projector.follower.metrics import FollowerMetrics


class _Ignored:
    """A collector that records nothing."""

    def labels(self, *_: object) -> _Ignored:
        return self

    def observe(self, *_: object) -> None:
        pass

    def inc(self, *_: object) -> None:
        pass

    def set(self, *_: object) -> None:
        pass

    def set_function(self, *_: object) -> None:
        pass


def _ignore_all(metrics: object) -> None:
    for name, value in vars(metrics).items():
        if isinstance(value, MetricWrapperBase):
            setattr(metrics, name, _Ignored())


class UnmeteredLeader(LeaderMetrics):
    """The leader's metrics off: nothing is counted, the health state still kept."""

    def __init__(self) -> None:
        super().__init__()
        _ignore_all(self)

    def committed(self, batch: Batch, seconds: float) -> None:
        """Only what `/readyz` needs: the last commit succeeded."""
        self.last_failure = None


class UnmeteredFollower(FollowerMetrics):
    """The follower's metrics off."""

    def __init__(self) -> None:
        super().__init__()
        _ignore_all(self)
