"""The projection's two streaming queries, waited on and stopped as one."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.listener import StreamingQueryProgress

POLL_S = 0.2
"""How often `Projection.awaitTermination` looks at the queries."""


@dataclass(frozen=True)
class Projection:
    """The running projection: the fold query (`changes`, `quarantine`: the freshness
    path) and the log query (`metadata_log`, straight from Kafka).

    It answers the `StreamingQuery` calls metalog makes; progress is the fold's.

    Attributes:
        fold: The query of the fold.
        log: The query of the log.
    """

    fold: StreamingQuery
    log: StreamingQuery

    @property
    def queries(self) -> tuple[StreamingQuery, StreamingQuery]:
        """Both queries, the fold's first."""
        return (self.fold, self.log)

    @property
    def isActive(self) -> bool:
        """Whether a query still runs."""
        return any(query.isActive for query in self.queries)

    @property
    def recentProgress(self) -> list[StreamingQueryProgress]:
        """The fold query's recent batches (StreamingQuery's names, for its callers)."""
        return self.fold.recentProgress

    @property
    def lastProgress(self) -> StreamingQueryProgress | None:
        """The fold query's last batch."""
        return self.fold.lastProgress

    def exception(self) -> StreamingQueryException | None:
        """Why a query failed (the fold's first); None while both run or stopped cleanly."""
        for query in self.queries:
            failure = query.exception()
            if failure is not None:
                return failure
        return None

    def awaitTermination(self, timeout: float | None = None) -> bool:
        """Wait until both queries have stopped, or `timeout` seconds.

        Returns:
            Whether both have stopped.

        Raises:
            StreamingQueryException: A query failed; the other is stopped first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                for query in self.queries:
                    if not query.isActive:
                        query.awaitTermination()  # returns at once, or raises its failure
                if not self.isActive:
                    return True
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                time.sleep(POLL_S)
        except StreamingQueryException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop both queries (each finishes or abandons its batch; the checkpoints resume)."""
        for query in self.queries:
            query.stop()
