"""A transactional producer at a fixed offered rate, recording when each record was acked.

"Leader ack" is `commit_transaction` returning, as for the leader: every
record of a transaction is acked at that instant. One transaction per tick
(`TICK_S`) carries `rate * TICK_S` records; if a commit runs late the next
transaction starts at once (the offered rate is then not reached, and the
achieved rate says so).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message, Producer

from events.topics import partition_for

TICK_S = 0.1


@dataclass
class RateRun:
    """What a fixed-rate run produced.

    Attributes:
        acked_at: Per record (in input order), the wall-clock second of its ack.
        offsets: Per record, its (partition, offset).
        started: Wall clock at the first transaction.
        finished: Wall clock at the last ack.
    """

    acked_at: list[float] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0

    @property
    def achieved_rate(self) -> float:
        """Records per second actually acked."""
        return len(self.acked_at) / max(self.finished - self.started, 1e-9)


def produce_at_rate(bootstrap: str, topic: str, records: Sequence[tuple[str, bytes]],
                    partitions: int, rate: float, transactional_id: str) -> RateRun:
    """Write `records` in order at `rate` records/s, one transaction per tick.

    Args:
        bootstrap: The cluster.
        topic: The topic.
        records: (catalog, value) pairs; each goes to its catalog's partition.
        partitions: The topic's partition count.
        rate: Offered records per second.
        transactional_id: The producer's transactional id.

    Returns:
        Ack times and positions per record.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 30_000, "linger.ms": 5})
    producer.init_transactions(30)
    run = RateRun(offsets=[(-1, -1)] * len(records))

    def delivered(index: int) -> Callable[..., None]:
        def callback(error: KafkaError | None, message: Message) -> None:
            if error is None:
                run.offsets[index] = (int(message.partition() or 0), int(message.offset() or 0))
        return callback

    per_tick = max(1, round(rate * TICK_S))
    run.started = time.time()
    for tick, start in enumerate(range(0, len(records), per_tick)):
        due = run.started + tick * TICK_S
        if (wait := due - time.time()) > 0:
            time.sleep(wait)
        producer.begin_transaction()
        chunk = records[start:start + per_tick]
        for offset, (catalog, value) in enumerate(chunk):
            producer.produce(topic, key=catalog.encode(), value=value,
                             partition=partition_for(catalog, partitions),
                             on_delivery=delivered(start + offset))
        producer.commit_transaction(30)
        acked = time.time()
        run.acked_at.extend([acked] * len(chunk))
    run.finished = time.time()
    producer.flush(30)
    return run


class RateThread(threading.Thread):
    """`produce_at_rate` in a background thread; `result` once joined."""

    def __init__(self, *args: object) -> None:
        super().__init__(name="rate-producer", daemon=True)
        self._args = args
        self.result: RateRun | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """Produce; keep the error for the joining thread."""
        try:
            self.result = produce_at_rate(*self._args)  # type: ignore[arg-type]
        except BaseException as exc:
            self.error = exc
