"""A call's outcome hand-over (`Waiter`, `LoopWaiter`), the partition memo; no Kafka."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from events.replies import Committed, Rejected
from events.topics import Topics, partition_for
from producers.client.channel import LoopWaiter
from producers.leader.waiter import Waiter
from producers.routing.layout import Layout
from projector.errors import AccessDenied

REPLY = Committed(command_id="c1", catalog="greptime", resource_version=4, schema_epoch=4)
LATE = Rejected(command_id="c1", catalog="greptime", code="X", message="late")


def test_a_reply_set_before_the_wait_is_returned_at_once() -> None:
    waiter = Waiter[Committed | Rejected]()
    waiter.set(REPLY)
    assert waiter.wait(0.0) is REPLY


def test_a_wait_without_a_reply_times_out_with_none() -> None:
    began = time.monotonic()
    assert Waiter[Committed | Rejected]().wait(0.05) is None
    assert time.monotonic() - began >= 0.04
    assert Waiter[Committed | Rejected]().wait(-1.0) is None  # a negative timeout does not block


def test_the_waiting_thread_gets_the_first_reply_and_a_repeat_is_ignored() -> None:
    waiter = Waiter[Committed | Rejected]()
    got: list[Committed | Rejected | None] = []
    thread = threading.Thread(target=lambda: got.append(waiter.wait(5.0)))
    thread.start()
    waiter.set(REPLY)
    waiter.set(Rejected(command_id="c1", catalog="greptime", code="X", message="late"))
    thread.join(5.0)
    assert got == [REPLY]


def test_the_layout_remembers_each_catalogs_partition() -> None:
    layout = Layout(Topics(), commands=7, events=7, replies=3)
    for catalog in ("greptime", "tidb", "a" * 100):
        assert layout.catalog_partition(catalog) == partition_for(catalog, 7)
        assert layout.catalog_partition(catalog) == partition_for(catalog, 7)
    assert layout == Layout(Topics(), commands=7, events=7, replies=3)


def test_a_loop_waiter_set_from_another_thread_resolves_its_future_once() -> None:
    async def wait_for_reply() -> Committed | Rejected | AccessDenied:
        waiter = LoopWaiter(asyncio.get_running_loop())
        setter = threading.Thread(target=lambda: (waiter.set(REPLY), waiter.set(LATE)))
        setter.start()
        outcome = await asyncio.wait_for(waiter.future, 5.0)
        setter.join(5.0)
        await asyncio.sleep(0)  # a second resolution, had one been scheduled, runs here
        assert waiter.future.result() is REPLY
        return outcome

    assert asyncio.run(wait_for_reply()) is REPLY


def test_a_loop_waiter_whose_call_gave_up_ignores_a_late_reply() -> None:
    async def give_up_then_reply() -> bool:
        waiter = LoopWaiter(asyncio.get_running_loop())
        waiter.future.cancel()  # the call timed out and went
        waiter.set(REPLY)
        await asyncio.sleep(0)
        return waiter.future.cancelled()

    assert asyncio.run(give_up_then_reply())


def test_a_burst_of_outcomes_wakes_the_loop_once_and_reaches_every_call() -> None:
    """`Deliveries`: replies set from the reader thread while the loop is busy are handed
    over by one wake of the loop, each to its own call."""
    async def burst() -> tuple[list[object], int]:
        loop = asyncio.get_running_loop()
        waiters = [LoopWaiter(loop) for _ in range(50)]
        wakes = 0
        scheduled = loop.call_soon_threadsafe

        def counted(*args: Any) -> Any:
            nonlocal wakes
            wakes += 1
            return scheduled(*args)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        setter = threading.Thread(target=lambda: [w.set(REPLY if i % 2 else LATE)
                                                  for i, w in enumerate(waiters)])  # fmt: skip
        setter.start()
        setter.join(5.0)  # the loop is held here: every outcome waits for one wake
        outcomes = [await asyncio.wait_for(w.future, 5.0) for w in waiters]
        return outcomes, wakes

    outcomes, wakes = asyncio.run(burst())
    assert outcomes == [REPLY if i % 2 else LATE for i in range(50)]
    assert wakes == 1
