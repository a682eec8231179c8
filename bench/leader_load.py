"""Load generators for ``bench.leader``: closed-loop clients, an open-loop schedule, stats.

Every system under test is driven through the same two functions so the
numbers are comparable: ``closed_loop`` runs N threads that each send one
command, wait for its acknowledgement and send the next; ``open_loop`` offers
commands at a fixed rate whatever the latency (no coordinated omission: a
command's latency is measured from the time it was *scheduled*, so queueing in
the load generator counts against the system). ``rates`` reads the offered rates of
``--rate``; ``log`` writes the bench's progress lines.
"""

from __future__ import annotations

import math
import queue
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

Op = Callable[[], None]
"""One command: returns once it is acknowledged, raises if it failed."""


@dataclass(frozen=True, slots=True)
class Result:
    """What one measurement window saw."""

    system: str
    clients: int
    ops: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    offered: float | None = None
    cpu_us: dict[str, float] | None = None
    """CPU µs per acknowledged command by process, when measured (`bench.leader_cpu`)."""

    @property
    def rate(self) -> float:
        """Acknowledged commands per second in the window."""
        return self.ops / self.seconds if self.seconds > 0 else 0.0


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of already sorted values (NaN when empty)."""
    if not sorted_values:
        return math.nan
    rank = max(0, math.ceil(fraction * len(sorted_values)) - 1)
    return sorted_values[min(rank, len(sorted_values) - 1)]


def _result(
    system: str, clients: int, latencies: list[float], errors: int, seconds: float,
    offered: float | None = None, ops: int | None = None,
) -> Result:  # fmt: skip
    latencies.sort()
    return Result(
        system=system, clients=clients, ops=len(latencies) if ops is None else ops,
        errors=errors, seconds=seconds,
        p50_ms=percentile(latencies, 0.50) * 1000, p99_ms=percentile(latencies, 0.99) * 1000,
        offered=offered,
    )  # fmt: skip


def closed_loop(
    system: str, ops: list[Op], warmup: float, duration: float, max_errors: int = 100
) -> Result:
    """Run ``ops[i]`` back to back in thread ``i``; measure the window after ``warmup``.

    Only commands that both start and finish inside the window are counted, so
    the warm-up (connections, first batches) and the drain at the end stay out.
    The run stops early once ``max_errors`` commands failed.
    """
    start_barrier = threading.Barrier(len(ops) + 1)
    stop = threading.Event()
    lock = threading.Lock()
    latencies: list[float] = []
    errors = 0
    window: list[float] = []

    def worker(op: Op) -> None:
        nonlocal errors
        mine: list[float] = []
        failed = 0
        start_barrier.wait()
        begin, end = window
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                op()
            except Exception:  # counted, the run goes on
                failed += 1
                if failed >= max_errors:
                    stop.set()
                continue
            t1 = time.perf_counter()
            if t0 >= begin and t1 <= end:
                mine.append(t1 - t0)
        with lock:
            latencies.extend(mine)
            errors += failed

    threads = [threading.Thread(target=worker, args=(op,), daemon=True) for op in ops]
    for thread in threads:
        thread.start()
    now = time.perf_counter()
    window.extend((now + warmup, now + warmup + duration))
    start_barrier.wait()
    stop.wait(warmup + duration)
    stop.set()
    for thread in threads:
        thread.join(timeout=30.0)
    return _result(system, len(ops), latencies, errors, duration)


def open_loop(
    system: str, op: Callable[[int], None], rate: float, warmup: float, duration: float,
    pool: int, workers: int = 256,
) -> Result:  # fmt: skip
    """Offer ``rate`` commands/s for ``warmup + duration`` seconds; measure after the warm-up.

    Command ``k`` is due at ``start + k / rate``; it runs on a pool of
    ``workers`` threads as ``op(slot)``, where ``slot`` is one of ``pool``
    exclusive slots (a table that no other in-flight command touches, so
    optimistic concurrency never rejects). Latency runs from the due time to
    the acknowledgement, so waiting for a worker or a free slot counts; it is
    kept for the commands due in the window. The rate is the acknowledgements
    that arrived in the window: below ``rate`` when the system cannot keep up.
    """
    slots: queue.SimpleQueue[int] = queue.SimpleQueue()
    for slot in range(pool):
        slots.put(slot)
    lock = threading.Lock()
    latencies: list[float] = []
    errors = 0
    acked = 0
    start = time.perf_counter() + 0.1
    begin, end = start + warmup, start + warmup + duration

    def one(due: float) -> None:
        nonlocal errors, acked
        slot = slots.get()
        try:
            op(slot)
        except Exception:  # counted, the run goes on
            with lock:
                errors += 1
            return
        finally:
            slots.put(slot)
        done = time.perf_counter()
        with lock:
            if begin <= due:
                latencies.append(done - due)
            if begin <= done <= end:
                acked += 1

    total = int((warmup + duration) * rate)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="open-loop") as executor:
        for k in range(total):
            due = start + k / rate
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            executor.submit(one, due)
    return _result(system, workers, latencies, errors, duration, offered=rate, ops=acked)


def rates(text: str) -> list[float]:
    """The open-loop rates of ``--rate`` (0 skips the phase)."""
    return [rate for rate in (float(x) for x in text.split(",") if x.strip()) if rate > 0]


def log(message: str) -> None:
    """One line of the bench's progress on stderr, with the UTC time."""
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)
