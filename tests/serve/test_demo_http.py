"""The HTTP step of `make demo`, run as `python -m metalog.demo.http` against a real broker:
`metalog serve` on loopback, a watch, one write, and nothing but metalog's own words."""

from __future__ import annotations

import re

import pytest

from tests.fixtures.demo import run_step
from tests.fixtures.kafka import TopicSet

pytestmark = pytest.mark.integration


def test_the_demo_http_step_shows_one_write_and_the_watch_that_saw_it(wire: TopicSet) -> None:
    done = run_step("metalog.demo.http", wire)
    out = done.stdout
    assert "$ curl -N 'http://127.0.0.1:" in out and "/tables?watch=true&resourceVersion=" in out
    assert "$ curl -X POST http://127.0.0.1:" in out and "/commands/CreateTable" in out
    committed = re.search(r"200: committed public\.clicks as table (\d+) \(version 1\) at "
                          r"resource_version (\d+)", out)  # fmt: skip
    assert committed, out
    table_id, rv = committed.groups()
    assert (f"watch: ADDED __table_info/{table_id} (public.clicks, version 1) at "
            f"resource_version {rv}") in out
    # No library chatter: no logging lines, no server log, nothing on stderr.
    assert done.stderr == ""
    assert "INFO" not in out and "WARNING" not in out and "Uvicorn" not in out
