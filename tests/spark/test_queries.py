"""The projection's two queries waited on as one (no Spark needed: stand-in queries)."""

from __future__ import annotations

from typing import cast

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming import StreamingQuery

from streaming.spark.queries import Projection


class FakeQuery:
    """A stand-in `StreamingQuery`: active until stopped, or failed with `failure`."""

    def __init__(self, active: bool = True, failure: str | None = None) -> None:
        self.isActive = active and failure is None
        self.failure = failure
        self.stopped = False

    def awaitTermination(self, timeout: float | None = None) -> bool:
        if self.failure is not None:
            raise StreamingQueryException(message=self.failure)
        return not self.isActive

    def stop(self) -> None:
        self.isActive = False
        self.stopped = True


def _projection(fold: FakeQuery, log: FakeQuery) -> Projection:
    return Projection(cast(StreamingQuery, fold), cast(StreamingQuery, log))


def test_a_failed_query_stops_the_other_and_its_failure_is_raised() -> None:
    fold, log = FakeQuery(), FakeQuery(failure="the log query failed")

    with pytest.raises(StreamingQueryException, match="the log query failed"):
        _projection(fold, log).awaitTermination()

    assert fold.stopped and not fold.isActive


def test_a_query_that_finished_leaves_the_other_running_until_it_ends() -> None:
    fold, log = FakeQuery(), FakeQuery(active=False)
    projection = _projection(fold, log)

    assert projection.awaitTermination(0.3) is False
    assert projection.isActive and not fold.stopped

    fold.stop()
    assert projection.awaitTermination() is True
