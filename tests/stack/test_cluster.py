"""`metalog up --brokers 3`: three KRaft nodes on loopback; one is killed mid-burst."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from events.replies import Committed
from events.topics import Topics
from events.values import Column
from metalog.stack import cluster as stack_cluster
from metalog.stack.config import StackConfig
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, LeaderUnavailable
from producers.leader.log import read_events
from projector.fold.apply import replay
from projector.fold.image import Image
from projector.follower.follower import Follower
from tests.leader.history import check_history

pytestmark = pytest.mark.integration

PORT = 19600  # nodes on 19600..19605
COLUMNS = (Column(name="id", data_type="int64"),)
CATALOGS = ("greptime", "shop", "ads")
CLIENTS = 4
PER_CLIENT = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackConfig]:
    config = StackConfig(state_dir=tmp_path_factory.mktemp("cluster"), port=PORT, heap="384m")
    stack_cluster.up(config)
    try:
        yield config
    finally:
        stack_cluster.down(config)


def _replicas(admin: AdminClient, topic: str) -> set[int]:
    metadata = admin.list_topics(topic, timeout=10.0).topics[topic]
    return {len(p.replicas) for p in metadata.partitions.values()}


def _min_isr(admin: AdminClient, topic: str) -> str:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return (
        admin.describe_configs([resource])[resource]
        .result(timeout=10.0)["min.insync.replicas"]
        .value
    )


def _send(client: MetadataClient, catalog: str, table: str, command_id: str) -> Committed:
    while True:  # the client's contract: retry an unknown outcome with the same command id
        try:
            return client.create_table("public", table, COLUMNS, catalog=catalog,
                                       command_id=command_id, timeout=20.0)  # fmt: skip
        except (CommandOutcomeUnknown, LeaderUnavailable):
            continue


def test_one_killed_broker_loses_nothing_acked_and_the_leader_serves_on(
    cluster: StackConfig, tmp_path: Path
) -> None:
    bootstrap = stack_cluster.bootstrap(cluster)
    topics = Topics(cluster.topic_prefix)
    with (tmp_path / "leader.log").open("ab") as log:
        leader = subprocess.Popen(
            [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", bootstrap,
             "--prefix", topics.prefix],
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    acked: dict[str, Committed] = {}
    count = threading.Semaphore(0)

    def work(n: int) -> None:
        with MetadataClient(bootstrap, catalog=CATALOGS[0], actor=f"c{n}", topics=topics) as client:
            for i in range(PER_CLIENT):
                command_id = f"{n}-{i}"
                catalog = CATALOGS[(n + i) % len(CATALOGS)]
                acked[command_id] = _send(client, catalog, f"t{n}_{i}", command_id)
                count.release()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(CLIENTS)]
    try:
        for thread in threads:
            thread.start()
        for _ in range(CLIENTS * PER_CLIENT // 3):
            count.acquire()
        assert stack_cluster.kill_node(cluster, 2)  # kill -9 mid-burst
        for _ in range(CLIENTS * PER_CLIENT // 3):
            count.acquire()
        assert stack_cluster.start_node(cluster, 2)  # restart: it catches up by itself
        for thread in threads:
            thread.join()
        assert leader.poll() is None, "the leader stopped"
    finally:
        leader.send_signal(signal.SIGTERM)
        leader.wait(timeout=60.0)

    assert len(acked) == CLIENTS * PER_CLIENT
    log_all = [
        e for p in range(cluster.partitions) for e in read_events(bootstrap, topics.events, p)
    ]
    applied = {e.command_id: e for e in log_all if e.command_id is not None}
    for command_id, committed in acked.items():  # nothing acked lost, each as acked
        assert applied[command_id].resource_version == committed.resource_version
    with Follower(bootstrap, CATALOGS, topics=topics) as follower:
        for catalog in CATALOGS:
            events = [e for e in log_all if e.catalog == catalog]
            check_history(events)  # dense, chained, each command id once
            image = follower.wait_for(events[-1].resource_version, timeout=60.0, catalog=catalog)
            assert image == replay(Image.empty(catalog), events)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    internal = ("__consumer_offsets", "__transaction_state")
    for topic in (*topics.all(), *internal):
        assert _replicas(admin, topic) == {3}, topic
    for topic in (topics.events, topics.commands, topics.replies):
        assert _min_isr(admin, topic) == "2", topic
    for topic in internal:
        assert _min_isr(admin, topic) == "2", topic
