"""The anomaly the chaos run found (docs/reliability.md, "Anomalies"), reproduced on one broker.

`Follower.wait_caught_up` promises that the published image then holds
everything committed before the call. It targets the events partition's
watermark as a read_committed consumer sees it: the last stable offset. A
transaction's commit returns before the broker writes its markers, and any
transaction still open on the partition (a zombie leader's, here a foreign
producer's) holds that offset back, so the target can lie before an acked
event: the call returns True with an image that lacks the acked write. The
chaos run saw it as a stale read right after the same client's acked alter
(seed 7, `--reads caught-up`); an open transaction makes it deterministic.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from events.values import Column
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from projector.follower.follower import Follower
from tests.fixtures.kafka import TopicSet

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


def test_wait_caught_up_never_claims_an_image_without_a_write_acked_before_it(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    client.create_table("public", "t", COLUMNS)
    foreign = Producer({"bootstrap.servers": wire.bootstrap,
                        "transactional.id": f"{wire.prefix}-x"})
    foreign.init_transactions(30.0)
    foreign.begin_transaction()
    foreign.produce(wire.events, b"open", key=b"elsewhere", partition=0)
    foreign.flush(30.0)  # an open transaction on the events partition, below what follows
    try:
        acked = client.alter_table("public", "t", set_options={"ttl": "1d"}, expected_version=1)
        with Follower(wire.bootstrap, "greptime", topics=wire.topics) as follower:
            caught_up = follower.wait_caught_up(timeout=5.0)
            image = follower.current()
    finally:
        foreign.abort_transaction(30.0)

    if caught_up:  # it may say it could not catch up in time; never that it did, wrongly
        assert image.resource_version >= acked.resource_version
    with Follower(wire.bootstrap, "greptime", topics=wire.topics) as follower:
        assert follower.wait_caught_up(timeout=30.0)  # the transaction below is decided now
        assert follower.current().resource_version >= acked.resource_version
