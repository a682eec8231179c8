"""A warm standby: a leader keeps the images of the partitions it does not own.

As a follower would, it starts each such partition from its snapshots (and
the lookback that refills dedupe) and reads the tail of the events partition
every `LeaderOptions.standby_poll_s`. When the group hands it one of them, the
owner takes that state (`take`) and reads only what was committed since the
last poll, instead of loading snapshots and reading the lookback on the
takeover's clock. The cost is memory: every catalog of every partition this
process does not own, beside those it does (docs/benchmarks/failover.md).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from pathlib import Path

from producers.leader.options import LeaderOptions
from producers.leader.owner import stamp_now
from producers.leader.rebuild import NewCatalog, Rebuilt, catch_up, make_catalog, warm_up
from producers.leader.restart import RestartPoint, snapshot_start
from projector.kafka.errors import READ_FAILURES
from projector.kafka.security import PLAINTEXT, KafkaSecurity

__all__ = ["Standby"]

log = logging.getLogger(__name__)


class Standby:
    """Keeps every partition this process does not own rebuilt up to the log's recent end.

    Args:
        bootstrap: `host:port` of the Kafka cluster.
        topic: The events topic.
        partitions: How many partitions it has.
        snapshot_dir: Where the snapshots are read from (None: replay from the start).
        lookback: Offsets read before the snapshots' to refill the dedupe window.
        new_catalog: Makes an empty catalog (the owner's settings).
        poll_s: Seconds between two reads of the tails.
        security: How it signs in to Kafka.
    """

    def __init__(
        self, bootstrap: str, topic: str, partitions: int, snapshot_dir: Path | None,
        lookback: int, new_catalog: NewCatalog, poll_s: float = 1.0,
        security: KafkaSecurity = PLAINTEXT,
    ) -> None:  # fmt: skip
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.snapshot_dir = snapshot_dir
        self.lookback = lookback
        self.new_catalog = new_catalog
        self.poll_s = poll_s
        self.security = security
        self._kept: dict[int, Rebuilt] = {}
        self._owned: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metalog-standby", daemon=True)

    @classmethod
    def of_leader(
        cls, bootstrap: str, topic: str, partitions: int, leader_id: str,
        options: LeaderOptions, limit: int, security: KafkaSecurity = PLAINTEXT,
    ) -> Standby:  # fmt: skip
        """A started standby for a leader's partitions, with its settings (`options`)."""
        new_catalog = functools.partial(make_catalog, leader_id=leader_id, stamps=stamp_now,
                                        limit=limit, checkpoints=options.checkpoints)
        standby = cls(bootstrap, topic, partitions, options.snapshot_dir,
                      options.dedupe_lookback, new_catalog, options.standby_poll_s, security)
        standby.start()
        return standby

    def start(self) -> None:
        """Start keeping the partitions not owned, in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop, and drop what it keeps."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30.0)
        self._kept.clear()

    def offset(self, partition: int) -> int | None:
        """The events offset up to which `partition` is kept (None: not kept, or not yet)."""
        kept = self._kept.get(partition)
        return None if kept is None else kept.next_offset

    def take(self, partition: int) -> Rebuilt | None:
        """This process now owns `partition`: its kept state (None if none yet), no longer kept.

        Waits for an update of that partition under way: it is further along
        than a fresh start would be.
        """
        with self._lock:
            self._owned.add(partition)
            return self._kept.pop(partition, None)

    def release(self, partition: int) -> None:
        """This process no longer owns `partition`: keep it again from the next poll."""
        with self._lock:
            self._owned.discard(partition)

    def _run(self) -> None:
        while not self._stop.is_set():
            for partition in range(self.partitions):
                if self._stop.is_set():
                    return
                with self._lock:
                    if partition in self._owned:
                        continue
                    try:
                        self._keep(partition)
                    except READ_FAILURES as exc:  # the next poll tries again
                        log.warning("standby: partition %d: %s", partition, exc)
                    except Exception:  # half-folded: drop it (a takeover starts cold)
                        log.exception("standby: partition %d dropped", partition)
                        self._kept.pop(partition, None)
            self._stop.wait(self.poll_s)

    def _keep(self, partition: int) -> None:
        """Start `partition` from its snapshots, or read the tail after what it keeps."""
        kept = self._kept.get(partition)
        if kept is not None:
            catch_up(self.bootstrap, self.topic, partition, kept, self.new_catalog,
                     self.security)  # fmt: skip
            return
        began = time.perf_counter()
        start = RestartPoint()
        if self.snapshot_dir is not None:
            start = snapshot_start(self.snapshot_dir, self.topic, partition)
        kept = warm_up(self.bootstrap, self.topic, partition, start, self.new_catalog,
                       self.lookback, security=self.security)  # fmt: skip
        self._kept[partition] = kept
        log.info("standby: partition %d warm at offset %d (%d catalogs) in %.2f s", partition,
                 kept.next_offset, len(kept.catalogs), time.perf_counter() - began)  # fmt: skip
