"""schemathesis reads /openapi.json and fuzzes every operation: no 5xx, responses match schemas.

The watch route is left out: its 200 is an endless stream (tests/serve/test_watch_*.py
cover it). Examples are bounded (`--max-examples`) and seeded, so a run is repeatable.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from server.catalogs import ServerSettings
from tests.fixtures.kafka import TopicSet
from tests.serve.conftest import Served, settings_for

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).parent / "data" / "schemathesis.toml"
"""Fixes the `catalog` path parameter to the served one (others are a 404 each)."""

CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance")  # fmt: skip


def test_schemathesis_finds_no_5xx_and_no_response_off_its_schema(
    leader: object, wire: TopicSet, serve: Callable[[ServerSettings], Served]
) -> None:
    """Every operation but watch, fuzzed from the OpenAPI document: every check passes."""
    fuzzed = serve(settings_for(wire, wait_timeout=0.5, command_timeout=20.0))
    command = shutil.which("schemathesis") or str(Path(sys.executable).parent / "schemathesis")
    run = subprocess.run(
        [command, "--config-file", str(CONFIG), "run", f"{fuzzed.url}/openapi.json",
         "--checks", CHECKS,
         "--phases", "examples,fuzzing", "--max-examples", "8", "--seed", "45",
         "--exclude-path-regex", "/watch$", "--workers", "1", "--request-timeout", "60",
         "--suppress-health-check", "all", "--no-color"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
