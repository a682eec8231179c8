"""A real `metalog follow --metrics-port` process paused (SIGSTOP) while commands commit:
`metalog status` reports it as not answering meanwhile; once resumed, its own /metrics
show it caught up with exactly the burst it missed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from events.values import Column
from metalog.cli import main
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import wait_until
from tests.operations.scrape import free_port, scrape, status_of, value

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)
BURST = 5


@pytest.fixture
def follow(wire: TopicSet) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`metalog follow` of the test's topics with its metrics on a free port: (process, url)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "follow", "--bootstrap", wire.bootstrap,
         "--prefix", wire.prefix, "--catalog", "greptime", "--metrics-port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGCONT)  # a stopped process ignores SIGTERM until resumed
        process.send_signal(signal.SIGTERM)
        process.wait(30.0)


def _at(url: str) -> float:
    return value(scrape(url), "metalog_follower_resource_version", catalog="greptime")


def _state(pid: int) -> str:
    """The process's state letter (`T`: stopped), from /proc."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _status(url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["status", "--json", "--metrics", url, "--metrics-timeout", "1"]) == 0
    processes = json.loads(capsys.readouterr().out)["processes"]
    assert isinstance(processes, list)
    return dict(processes[0])


def test_a_paused_follower_catches_up_with_the_burst_it_missed(
    wire: TopicSet, leader: Leader, follow: tuple[subprocess.Popen[bytes], str],
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("METALOG_STATE_DIR", str(tmp_path))  # `status` looks at no broker of ours
    process, url = follow
    with MetadataClient(wire.bootstrap, catalog="greptime", actor="alice",
                        topics=wire.topics) as client:  # fmt: skip
        first = client.create_table("public", "before", COLUMNS).resource_version
        wait_until(lambda: status_of(f"{url}/readyz") == 200, timeout=60.0)
        wait_until(lambda: _at(url) == first)
        before = scrape(url)
        assert value(before, "metalog_follower_lag_records", catalog="greptime") == 0
        applied = value(before, "metalog_follower_events_applied_total", catalog="greptime")

        process.send_signal(signal.SIGSTOP)
        try:
            last = 0
            for n in range(BURST):  # committed while the follower cannot read
                last = client.create_table("public", f"burst{n}", COLUMNS).resource_version
            wait_until(lambda: _state(process.pid) == "T")
            paused = _status(url, capsys)  # the kernel takes the connection; nobody answers
            assert paused["reachable"] is False
            assert "no answer within 1 s" in str(paused["error"])
        finally:
            process.send_signal(signal.SIGCONT)

    assert last == first + BURST
    wait_until(lambda: _at(url) == last)
    # It holds the burst; its lag returns to 0 once it reads the partition's end (the
    # transaction's marker after the last event).
    wait_until(lambda: value(scrape(url), "metalog_follower_lag_records", catalog="greptime") == 0)
    after = scrape(url)
    assert value(after, "metalog_follower_resource_version", catalog="greptime") == last
    assert value(after, "metalog_follower_lag_seconds", catalog="greptime") == 0
    assert value(after, "metalog_follower_events_applied_total", catalog="greptime") == (
        applied + BURST)
    assert value(after, "metalog_follower_up") == 1
    assert status_of(f"{url}/readyz") == 200
    resumed = _status(url, capsys)
    assert resumed["ready"] is True
    assert resumed["follower"] == {"up": True, "catalogs": {"greptime": {
        "resource_version": last, "lag_records": 0, "lag_seconds": 0}}}
