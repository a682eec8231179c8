"""`metalog up --brokers 3`: a three-node KRaft cluster on loopback, from the same jars.

Each node is a combined controller+broker with its own state directory
(`{state_dir}/node{n}`) and port pair (`port + 2(n-1)` for clients, the next
for its controller); the three controllers are a static quorum
(`controller.quorum.voters`). Every topic, the offsets topic and the
transaction state log have three replicas and `min.insync.replicas=2`: one
node may stop and every acknowledged write is still on two. Each node runs
exactly as the single-node stack runs its broker (`metalog.stack.broker`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import replace
from typing import Any

from metalog.errors import StackError
from metalog.stack.broker import (
    FORMAT_TIMEOUT_S,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    _cluster_id,
    _is_our_broker,
    _java,
    _launch,
    _port_open,
    _read_pid,
    _wait_ready,
)
from metalog.stack.broker import down as stop_node
from metalog.stack.config import StackConfig, log4j2_properties, server_properties
from projector.kafka.security import PLAINTEXT
from projector.kafka.topics import create_metalog_topics
from streaming.spark import jars

REPLICATION = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}
"""What makes one node's loss lose nothing acknowledged (acks=all needs two in sync)."""

CLUSTER_FILE = "cluster.json"
"""In the stack's state directory: the cluster's id and size, written when it is formatted."""


def nodes(config: StackConfig, brokers: int = 3) -> list[StackConfig]:
    """Each node's own config: its state directory and port pair."""
    made = []
    for n in range(1, brokers + 1):
        port = config.port + 2 * (n - 1)
        made.append(replace(config, state_dir=config.state_dir / f"node{n}", port=port,
                            controller_port=port + 1))  # fmt: skip
    return made


def bootstrap(config: StackConfig, brokers: int = 3) -> str:
    """Every node's client address, comma-separated."""
    return ",".join(node.bootstrap for node in nodes(config, brokers))


def node_properties(config: StackConfig, n: int, brokers: int = 3) -> str:
    """Node `n`'s server.properties: the single node's, in a static quorum, replicated."""
    voters = ",".join(
        f"{i}@127.0.0.1:{node.controller_port}" for i, node in enumerate(nodes(config, brokers), 1)
    )
    node = nodes(config, brokers)[n - 1]
    props = dict(line.split("=", 1) for line in server_properties(node).splitlines() if "=" in line)
    props.pop("controller.quorum.bootstrap.servers")  # dynamic quorum: one node only
    props.update({"node.id": str(n), "controller.quorum.voters": voters, **REPLICATION})
    lines = ["# Written by metalog.stack.cluster on every `up --brokers`."]
    return "\n".join([*lines, *(f"{k}={v}" for k, v in props.items())]) + "\n"


def is_cluster(config: StackConfig) -> bool:
    """Whether the stack's state directory holds a cluster (`up --brokers`)."""
    return (config.state_dir / CLUSTER_FILE).exists()


def size(config: StackConfig) -> int:
    """How many nodes the cluster in the stack's state directory has."""
    return int(json.loads((config.state_dir / CLUSTER_FILE).read_text())["brokers"])


def up(config: StackConfig, brokers: int = 3, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
    """Start every node that is not running, wait for all, create the metalog topics.

    Raises:
        StackError: A port is taken, a node did not format or start, or the
            state directory holds a single-node stack or another cluster size.
    """
    config.state_dir.mkdir(parents=True, exist_ok=True)
    record = config.state_dir / CLUSTER_FILE
    if (config.state_dir / "kraft").exists():
        raise StackError(f"{config.state_dir} holds a single-node stack: use another "
                         "METALOG_STATE_DIR for a cluster, or remove it")  # fmt: skip
    if record.exists():
        saved = json.loads(record.read_text())
        if saved["brokers"] != brokers or saved["port"] != config.port:
            raise StackError(f"{config.state_dir} holds a cluster of {saved['brokers']} nodes on "
                             f"port {saved['port']}: start it with those, or remove the "
                             "directory")  # fmt: skip
        cluster_id = saved["cluster_id"]
    else:
        cluster_id = _cluster_id()
    classpath = jars.broker_classpath()
    started = [n for n in range(1, brokers + 1)
               if start_node(config, n, brokers, cluster_id, classpath)]  # fmt: skip
    record.write_text(json.dumps({"cluster_id": cluster_id, "brokers": brokers,
                                  "port": config.port}))  # fmt: skip
    for node in nodes(config, brokers):
        pid = _read_pid(node)
        assert pid is not None
        _wait_ready(node, pid, timeout_s, PLAINTEXT)
    create_metalog_topics(bootstrap(config, brokers), config.topic_prefix, config.partitions)
    return {**status(config, brokers), "started": started}


def start_node(
    config: StackConfig, n: int, brokers: int = 3, cluster_id: str | None = None,
    classpath: str | None = None,
) -> bool:  # fmt: skip
    """Start node `n` unless it runs (formatting it on first use); whether it was started.

    Does not wait for it: `up` does, and a restarted node catches up on its own.
    """
    node = nodes(config, brokers)[n - 1]
    pid = _read_pid(node)
    if pid is not None and _is_our_broker(pid, node):
        return False
    for port in (node.port, node.controller_port):
        if _port_open(port):
            raise StackError(f"port {port} is already in use by another process: choose "
                             "another base port with METALOG_PORT")  # fmt: skip
    node.state_dir.mkdir(parents=True, exist_ok=True)
    node.properties_file.write_text(node_properties(config, n, brokers))
    node.log4j_file.write_text(log4j2_properties(node))
    classpath = classpath or jars.broker_classpath()
    if not (node.data_dir / "meta.properties").exists():
        if cluster_id is None:
            cluster_id = json.loads((config.state_dir / CLUSTER_FILE).read_text())["cluster_id"]
        _format(node, classpath, cluster_id)
    _launch(node, classpath)
    return True


def kill_node(config: StackConfig, n: int, brokers: int = 3) -> bool:
    """`kill -9` node `n` (fault tests); whether it was running."""
    node = nodes(config, brokers)[n - 1]
    pid = _read_pid(node)
    if pid is None or not _is_our_broker(pid, node):
        return False
    os.kill(pid, signal.SIGKILL)
    return True


def down(config: StackConfig, brokers: int = 3) -> bool:
    """Stop every node (SIGTERM, then SIGKILL after a bounded wait); keeps the data."""
    return any([stop_node(node, STOP_TIMEOUT_S) for node in nodes(config, brokers)])


def status(config: StackConfig, brokers: int = 3) -> dict[str, Any]:
    """The cluster's bootstrap and each node's pid (None when it is not running)."""
    pids = []
    for node in nodes(config, brokers):
        pid = _read_pid(node)
        pids.append(pid if pid is not None and _is_our_broker(pid, node) else None)
    return {
        "running": all(pid is not None for pid in pids),
        "bootstrap": bootstrap(config, brokers),
        "pids": pids,
        "state_dir": str(config.state_dir),
    }


def _format(node: StackConfig, classpath: str, cluster_id: str) -> None:
    """Format a node's storage for the static quorum (no `--standalone`)."""
    cmd = [_java(), "-Xmx256m", f"-Dlog4j2.configurationFile={node.log4j_file}",
           "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id,
           "-c", str(node.properties_file)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S,
                          check=False)  # fmt: skip
    if proc.returncode != 0:
        raise StackError(f"formatting {node.data_dir} failed:\n{proc.stdout}{proc.stderr}")
