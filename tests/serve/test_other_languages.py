"""Clients not written in Python talk to `metalog serve`: curl, and a Java single-file program."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.serve.conftest import Served

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BASE = "/v1/catalogs/greptime"


def _curl(*args: str) -> subprocess.CompletedProcess[str]:
    curl = shutil.which("curl")
    assert curl, "curl is a requirement of the tests (apt-get install curl)"
    return subprocess.run([curl, "-sS", *args], capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def test_curl_writes_conflicts_and_watches(served: Served) -> None:
    """curl: a write (200), the same If-Match again (409 problem), a watch seeing the write."""
    body = json.dumps({"schema_name": "public", "table_name": "by_curl",
                       "columns": [{"name": "id", "data_type": "Int64"}]})  # fmt: skip
    made = _curl("-X", "POST", "-H", "Content-Type: application/json", "--data", body,
                 served.url + f"{BASE}/commands/CreateTable")  # fmt: skip
    assert made.returncode == 0, made.stderr
    rv = json.loads(made.stdout)["resource_version"]
    stale = _curl("-X", "POST", "-H", "Content-Type: application/json", "-H", 'If-Match: "1"',
                  "--data", "{}", "-w", "\n%{http_code}", served.url + f"{BASE}/commands/Reload")
    problem, status = stale.stdout.rsplit("\n", 1)
    assert status == "409" and json.loads(problem)["error"] == "VersionConflict"
    # A watch is an endless stream: curl stops it after 5 s (exit 28 is the timeout).
    watched = _curl("-N", "--max-time", "5",
                    served.url + f"{BASE}/watch?resourceVersion={rv - 1}&keyPrefix=__table_name/")
    assert watched.returncode == 28, watched.stderr
    events = [json.loads(line) for line in watched.stdout.splitlines() if line]
    added = [e for e in events if e["type"] == "ADDED"]
    assert [e["object"]["key"] for e in added] == ["__table_name/greptime/public/by_curl"]


def test_a_java_client_creates_races_and_watches(served: Served) -> None:
    """`java Client.java URL`: a create, two conditional writes (one 409), a watch in order."""
    java = shutil.which("java")
    assert java, "the JDK is a requirement of metalog (the broker runs on it)"
    run = subprocess.run([java, str(ROOT / "examples" / "java" / "Client.java"), served.url],
                         capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "one 409" in run.stdout and "watch: [ADDED@" in run.stdout
