"""`LeaderOptions`: how a leader batches, commits, times out, snapshots and stands by."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from producers.leader.local import CheckpointSchedule
from producers.leader.restart import LOOKBACK

__all__ = ["LeaderOptions"]


@dataclass(frozen=True, slots=True)
class LeaderOptions:
    """Tuning of a leader; `checkpoints` (a key and a schedule) makes it sign checkpoints."""

    batch_size: int = 200
    max_command_bytes: int = 1 << 20
    transaction_timeout_ms: int = 10_000
    commit_timeout_s: float = 10.0
    session_timeout_ms: int = 10_000
    checkpoints: CheckpointSchedule | None = None
    snapshot_dir: Path | None = None
    """Where the partitions' snapshots are read from on a takeover and written to."""
    snapshot_every: int = 100_000
    """Committed events of a partition between its snapshots (and restart points)."""
    dedupe_lookback: int = LOOKBACK
    """Offsets read before the snapshots' on a takeover: their command ids refill dedupe."""
    warm_standby: bool = False
    """Keep the images of the partitions this process does not own (`producers.leader.standby`):
    a takeover then reads only the log's last tail. Costs each such partition's images in memory."""
    standby_poll_s: float = 1.0
    """How often a warm standby reads the tails of the partitions it does not own."""
    rejoin_backoff_s: float = 1.0
    """How long a leader that was fenced, or could not take a partition over, waits before
    it joins the group again (`producers.leader.group`)."""
