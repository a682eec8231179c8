"""Three KRaft brokers whose every process group reaches them through its own proxies.

Kafka brokers advertise their listener address in metadata: a client that
bootstraps through a proxy then connects to whatever address the broker
advertises. So each broker has one listener per process group (a leader, a
half of the clients) and that listener ADVERTISES the port of the group's
Toxiproxy proxy in front of it: a client of group `g` only ever learns, and
connects to, group `g`'s proxy ports, and a fault on them touches that group
alone. The brokers talk to each other and to their controllers on listeners
no proxy sits on.

Ports, from `base` (default 29000; all on 127.0.0.1):

- broker `n` (1..3): `base + 10(n-1)` inter-broker, `+1` controller, `+2+g`
  group `g`'s listener;
- group `g`'s proxy in front of broker `n`: `base + 100 + 10(n-1) + g`;
- Toxiproxy's API: `base + 90`.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from chaos.toxiproxy import Toxiproxy
from metalog.stack import broker as stack
from metalog.stack import cluster as stack_cluster
from metalog.stack.config import StackConfig, log4j2_properties, server_properties
from projector.kafka.security import PLAINTEXT
from projector.kafka.topics import create_metalog_topics
from streaming.spark import jars

BROKERS = 3
DEFAULT_BASE = 29000
GROUPS = ("leader0", "leader1", "clients0", "clients1")
"""The process groups: each leader process, and the two halves of the clients (with their
followers)."""


@dataclass(frozen=True)
class Layout:
    """Where everything of one chaos cluster listens, and its files."""

    state_dir: Path
    base: int = DEFAULT_BASE
    prefix: str = "chaos"
    partitions: int = 1
    heap: str = "384m"

    def node(self, n: int) -> StackConfig:
        """Broker `n`'s stack config (its inter-broker port is its `port`)."""
        port = self.base + 10 * (n - 1)
        return StackConfig(state_dir=self.state_dir / f"node{n}", port=port,
                           controller_port=port + 1, heap=self.heap,
                           topic_prefix=self.prefix)  # fmt: skip

    def listener_port(self, n: int, group: str) -> int:
        """Broker `n`'s listener for `group`."""
        return self.base + 10 * (n - 1) + 2 + GROUPS.index(group)

    def proxy_port(self, n: int, group: str) -> int:
        """The port of `group`'s proxy in front of broker `n` (what that listener advertises)."""
        return self.base + 100 + 10 * (n - 1) + GROUPS.index(group)

    @property
    def api_port(self) -> int:
        """Toxiproxy's HTTP API."""
        return self.base + 90

    @property
    def direct(self) -> str:
        """The brokers' inter-broker listeners (no proxy): for setup and the final check."""
        return ",".join(self.node(n).bootstrap for n in range(1, BROKERS + 1))

    def bootstrap(self, group: str) -> str:
        """The bootstrap of a process group: its own proxies."""
        return ",".join(f"127.0.0.1:{self.proxy_port(n, group)}" for n in range(1, BROKERS + 1))

    @staticmethod
    def proxy(n: int, group: str) -> str:
        """The Toxiproxy name of `group`'s proxy in front of broker `n`."""
        return f"{group}-b{n}"


def node_properties(layout: Layout, n: int) -> str:
    """Broker `n`'s server.properties: the stack's, in a static quorum, replicated, with one
    listener per group advertised at the group's proxy."""
    node = layout.node(n)
    voters = ",".join(f"{i}@127.0.0.1:{layout.node(i).controller_port}"
                      for i in range(1, BROKERS + 1))  # fmt: skip
    props = dict(line.split("=", 1) for line in server_properties(node).splitlines() if "=" in line)
    props.pop("controller.quorum.bootstrap.servers")
    names = [g.upper() for g in GROUPS]
    listeners = [f"PLAINTEXT://127.0.0.1:{node.port}",
                 f"CONTROLLER://127.0.0.1:{node.controller_port}"]  # fmt: skip
    pairs = list(zip(names, GROUPS, strict=True))
    listeners += [f"{name}://127.0.0.1:{layout.listener_port(n, g)}" for name, g in pairs]
    advertised = [f"PLAINTEXT://127.0.0.1:{node.port}"]
    advertised += [f"{name}://127.0.0.1:{layout.proxy_port(n, g)}" for name, g in pairs]
    protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT", *(f"{x}:PLAINTEXT" for x in names)]
    props.update({
        "node.id": str(n), "controller.quorum.voters": voters, **stack_cluster.REPLICATION,
        "listeners": ",".join(listeners), "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(protocols),
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
        "transaction.max.timeout.ms": "30000",
    })  # fmt: skip
    lines = ["# Written by chaos.cluster."]
    return "\n".join([*lines, *(f"{k}={v}" for k, v in props.items())]) + "\n"


def start_broker(layout: Layout, n: int) -> bool:
    """Start broker `n` unless it runs (formatting it on first use); whether it was started."""
    node = layout.node(n)
    pid = stack._read_pid(node)
    if pid is not None and stack._is_our_broker(pid, node):
        return False
    node.state_dir.mkdir(parents=True, exist_ok=True)
    node.properties_file.write_text(node_properties(layout, n))
    node.log4j_file.write_text(log4j2_properties(node))
    classpath = jars.broker_classpath()
    if not (node.data_dir / "meta.properties").exists():
        record = layout.state_dir / "cluster.json"
        if not record.exists():
            record.write_text(json.dumps({"cluster_id": stack._cluster_id()}))
        cluster_id = json.loads(record.read_text())["cluster_id"]
        stack_cluster._format(node, classpath, cluster_id)
    stack._launch(node, classpath)
    return True


def kill_broker(layout: Layout, n: int) -> bool:
    """`kill -9` broker `n`; whether it was running."""
    node = layout.node(n)
    pid = stack._read_pid(node)
    if pid is None or not stack._is_our_broker(pid, node):
        return False
    os.kill(pid, signal.SIGKILL)
    return True


def up(layout: Layout, proxy: Toxiproxy | None) -> None:
    """Start the brokers, create the proxies in front of them (None: no proxies; the groups'
    listeners then lead nowhere) and the topics.

    Raises:
        StackError: A broker did not format or start.
        ProxyError: A proxy could not be created.
    """
    layout.state_dir.mkdir(parents=True, exist_ok=True)
    for n in range(1, BROKERS + 1):
        start_broker(layout, n)
    for n in range(1, BROKERS + 1):
        node = layout.node(n)
        pid = stack._read_pid(node)
        assert pid is not None
        stack._wait_ready(node, pid, stack.START_TIMEOUT_S, PLAINTEXT)
        for group in GROUPS:
            if proxy is not None:
                proxy.create(Layout.proxy(n, group), layout.proxy_port(n, group),
                             layout.listener_port(n, group))  # fmt: skip
    create_metalog_topics(layout.direct, layout.prefix, layout.partitions)


def broker_pids(layout: Layout) -> dict[str, int]:
    """The running brokers' process ids, by name (`broker1`…)."""
    pids = {}
    for n in range(1, BROKERS + 1):
        pid = stack._read_pid(layout.node(n))
        if pid is not None and stack._is_our_broker(pid, layout.node(n)):
            pids[f"broker{n}"] = pid
    return pids


def down(layout: Layout) -> None:
    """Stop every broker (SIGTERM, then SIGKILL after a bounded wait); the data is kept."""
    for n in range(1, BROKERS + 1):
        stack.down(layout.node(n), stack.STOP_TIMEOUT_S)
