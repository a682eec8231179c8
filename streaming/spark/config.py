"""Where the projection reads and writes, and how often: no Spark here, so the command
line reads its defaults without a JVM (or pyspark) at hand."""

from __future__ import annotations

from dataclasses import dataclass

from projector.kafka.security import PLAINTEXT, KafkaSecurity

LOG_CHECKPOINT = "metadata_log"
"""The log query's checkpoint directory, inside the fold query's."""


@dataclass(frozen=True)
class ProjectionConfig:
    """Where the projection reads and writes, and how often.

    Attributes:
        bootstrap: Kafka `host:port` list.
        topic: The events topic (`{prefix}.events`).
        delta_dir: Root directory (or URI) of the Delta tables, one sub-directory each.
        checkpoint: The streaming checkpoint directory; it owns the query id and the
            fold's state.
        max_offsets_per_trigger: At most this many records per micro-batch (all if None).
        trigger_seconds: The micro-batch interval of a continuous run.
        once: Process everything available, then stop (`availableNow`).
        compact_seconds: A continuous run compacts the per-kind tables this often
            (0: never; `metalog project compact` does it on demand).
        maintain_seconds: A continuous run OPTIMIZEs and VACUUMs `changes` this often
            (0: never).
        security: How the Kafka source signs in to a secured cluster (the
            `projector` principal of `metalog up --secure`).
    """

    bootstrap: str
    topic: str
    delta_dir: str
    checkpoint: str
    max_offsets_per_trigger: int | None = None
    trigger_seconds: float = 1.0
    once: bool = False
    compact_seconds: float = 30.0
    maintain_seconds: float = 3600.0
    security: KafkaSecurity = PLAINTEXT

    def path(self, table: str) -> str:
        """The location of one table."""
        return f"{self.delta_dir.rstrip('/')}/{table}"

    @property
    def log_checkpoint(self) -> str:
        """The log query's checkpoint: a directory inside the fold query's."""
        return f"{self.checkpoint.rstrip('/')}/{LOG_CHECKPOINT}"
