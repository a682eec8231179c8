"""A read of the log after a commit holds what was committed: the flaky race, made deterministic.

`test_racing_clients_get_exactly_one_success_per_version[embedded_client]` failed
once on a fresh clone: the log it read back right after the last commit lacked
that commit. A whole-log read that stops at a read_committed consumer's first end
of partition stops at the last stable offset, and a transaction's commit returns
before the broker writes its markers, so that offset can lie below what was just
committed. Any transaction still open below the commit holds the offset back the
same way: here a foreign producer's, decided while the read waits. The reads used
after a commit (`producers.leader.log.read_events`, a client's `image`) target the
partition's decided end (`PartitionReader.read_decided`), as the follower does
(`tests/chaos/test_follower_reads.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from events.values import Column
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)

READS: dict[str, Callable[[TopicSet, MetadataClient], int]] = {
    "log_of": lambda wire, client: log_of(wire)[-1].resource_version,
    "image": lambda wire, client: client.image().resource_version,
}
"""The reads after a commit, each giving the last resource_version it holds."""


@pytest.mark.parametrize("read", sorted(READS))
def test_a_read_after_a_commit_holds_it_though_a_transaction_below_is_undecided(
    wire: TopicSet, leader: Leader, client: MetadataClient, read: str
) -> None:
    client.create_table("public", "t", COLUMNS)
    foreign = Producer({"bootstrap.servers": wire.bootstrap,
                        "transactional.id": f"{wire.prefix}-x"})  # fmt: skip
    foreign.init_transactions(30.0)
    foreign.begin_transaction()
    foreign.produce(wire.events, b"open", key=b"elsewhere", partition=0)
    foreign.flush(30.0)  # an open transaction on the events partition, below what follows
    decide = threading.Timer(1.0, foreign.abort_transaction, args=(30.0,))
    try:
        acked = client.alter_table("public", "t", set_options={"ttl": "1d"}, expected_version=1)
        decide.start()  # the transaction below is decided while the read waits for it
        held = READS[read](wire, client)
    finally:
        if decide.is_alive() or decide.finished.is_set():
            decide.join()
        else:
            foreign.abort_transaction(30.0)

    assert held == acked.resource_version
