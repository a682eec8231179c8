"""`--json` of the commands that need no broker: each output parses and has the keys
docs/cli.md documents. A process of its own per run, as a script would call it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from projector.snapshot.store import Position, write_snapshot
from tests.follower.workload import CATALOG, random_log
from tests.stack.test_cli_errors import metalog

SNAPSHOT_KEYS = {"path", "ok", "catalog", "resource_version", "keys", "size", "next_offset"}


def document(*args: str, **env: str) -> tuple[int, Any]:
    run = metalog(*args, "--json", **env)
    assert "Traceback" not in run.err
    [line] = run.out.splitlines()
    return run.code, json.loads(line)


def test_status_and_down_of_a_stopped_broker(tmp_path: Path) -> None:
    code, status = document("status", METALOG_STATE_DIR=str(tmp_path), METALOG_PORT="19999")
    assert code == 0
    assert set(status) == {"running", "ready", "bootstrap", "pid", "state_dir"}
    assert status["running"] is False and status["bootstrap"].endswith(":19999")
    code, down = document("down", METALOG_STATE_DIR=str(tmp_path))
    assert (code, down) == (0, {"stopped": False})


def test_snapshot_list_and_verify_report_each_file(tmp_path: Path) -> None:
    catalog = random_log(20, seed=5)
    good = write_snapshot(tmp_path, catalog.image, Position("metalog.events", 0, 42))
    code, listed = document(
        "snapshot", "list", "--snapshot-dir", str(tmp_path), "--catalog", CATALOG
    )
    assert code == 0
    [entry] = listed["snapshots"]
    assert set(entry) == SNAPSHOT_KEYS
    assert entry["path"] == str(good) and entry["ok"] is True and entry["catalog"] == CATALOG
    assert entry["resource_version"] == catalog.image.resource_version
    assert entry["next_offset"] == 42 and entry["size"] == good.stat().st_size
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    code, verified = document("snapshot", "verify", str(good), str(bad))
    assert code == 1
    first, second = verified["snapshots"]
    assert first == entry
    assert set(second) == {"path", "ok", "error"}
    assert second["path"] == str(bad) and second["ok"] is False and second["error"]
