"""`--json` of `show`, `follow`, `snapshot create` and `leader` against a real broker:
each output parses and has the keys docs/cli.md documents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from events.values import TableInfoValue
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import CATALOG, produce, random_log
from tests.stack.test_cli_errors import ROOT, metalog

pytestmark = pytest.mark.integration

TABLE_KEYS = {"table_id", "schema", "table", "version", "columns", "partitions", "regions"}
CHANGE_KEYS = {"resource_version", "change_resource_version", "schema_epoch", "op", "key",
               "value"}  # fmt: skip


def started(*args: str) -> subprocess.Popen[str]:
    """`metalog ARGS --json` running in the background, stdout piped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("METALOG_")}
    return subprocess.Popen([sys.executable, "-m", "metalog.cli", *args, "--json"], cwd=ROOT,
                            env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)  # fmt: skip


def lines_until(process: subprocess.Popen[str], done: Any) -> list[dict[str, Any]]:
    """Parse stdout's lines until `done(lines)`, then stop the process."""
    assert process.stdout is not None
    lines: list[dict[str, Any]] = []
    try:
        while not done(lines):
            line = process.stdout.readline()
            assert line, f"the process ended (code {process.poll()}) after {lines}"
            lines.append(json.loads(line))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        process.stdout.close()
    return lines


def test_show_follow_and_snapshot_create(wire: TopicSet, tmp_path: Path) -> None:
    catalog = random_log(15, seed=2)
    produce(wire, catalog.events)
    where = ("--bootstrap", wire.bootstrap, "--prefix", wire.prefix, "--catalog", CATALOG)
    run = metalog("show", *where, "--json")
    assert run.code == 0, run.err
    shown = json.loads(run.out)
    assert set(shown) == {"catalog", "resource_version", "stable_epoch", "publish_mode",
                          "pending", "tables", "label_rules"}  # fmt: skip
    assert shown["resource_version"] == catalog.image.resource_version
    expected = {(v.schema_name, v.table_name) for _, v in catalog.image.published.items()
                if isinstance(v, TableInfoValue)}  # fmt: skip
    assert expected and {(t["schema"], t["table"]) for t in shown["tables"]} == expected
    assert all(set(t) == TABLE_KEYS for t in shown["tables"])
    assert all(set(r) == {"rule_id", "labels", "ranges"} for r in shown["label_rules"])

    keys = {k for k, _ in catalog.image.published.items()}
    follow = started("follow", *where)
    changes = lines_until(follow, lambda got: {c["key"] for c in got} >= keys)
    assert all(set(c) == CHANGE_KEYS for c in changes)
    assert all(c["op"] in ("PUT", "DELETE") for c in changes)
    assert [c["resource_version"] for c in changes] == sorted(c["resource_version"]
                                                              for c in changes)  # fmt: skip

    run = metalog("snapshot", "create", *where, "--snapshot-dir", str(tmp_path), "--json")
    assert run.code == 0, run.err
    [written] = (tmp_path / CATALOG).glob("*.parquet")
    assert json.loads(run.out) == {"path": str(written)}


def test_the_leader_prints_its_status_as_json_lines(wire: TopicSet) -> None:
    leader = started("leader", "--bootstrap", wire.bootstrap, "--prefix", wire.prefix,
                     "--group", f"{wire.prefix}-leaders")  # fmt: skip
    lines = lines_until(leader, lambda got: any("owns partition" in x["message"] for x in got))
    assert all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    assert all(x["time"].endswith("Z") for x in lines)
