"""A call's outcome hand-over (`producers.leader.waiter.Waiter`), the partition memo; no Kafka."""

from __future__ import annotations

import threading
import time

from events.replies import Committed, Rejected
from events.topics import Topics, partition_for
from producers.kafka.routing import Layout
from producers.leader.waiter import Waiter

REPLY = Committed(command_id="c1", catalog="greptime", resource_version=4, schema_epoch=4)


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
