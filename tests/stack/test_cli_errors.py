"""The CLI when things go wrong: one line on stderr, a non-zero exit code, no traceback.

Each case runs `python -m metalog.cli` in a process of its own, as a user
would. `127.0.0.1:1` is a port nothing listens on, so most cases need no broker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from metalog.cli.commands import exit_code
from producers.errors import CommandOutcomeUnknown, InvalidName, LeaderUnavailable
from projector.errors import FollowerStopped, SnapshotError
from tests.fixtures.kafka import TopicSet

ROOT = Path(__file__).resolve().parents[2]
NOWHERE = "127.0.0.1:1"


@dataclass(frozen=True)
class Run:
    """What a finished `metalog` process left."""

    code: int
    out: str
    err: str

    @property
    def one_line(self) -> str:
        """stderr, which must be exactly one line (and stdout empty)."""
        assert self.out == ""
        assert "Traceback" not in self.err
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err[:2000]
        return lines[0]


def metalog(*args: str, **env: str) -> Run:
    """Run `metalog ARGS` with the environment plus `env` (METALOG_* unset unless given)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("METALOG_")}
    done = subprocess.run(
        [sys.executable, "-m", "metalog.cli", *args],
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def test_a_leader_with_nothing_listening_prints_one_line() -> None:
    run = metalog("leader", "--bootstrap", NOWHERE)
    assert run.code == 69
    assert run.one_line.startswith(f"metalog: error: cannot reach the Kafka cluster at {NOWHERE}")


def test_a_malformed_port_variable_prints_one_line() -> None:
    run = metalog("status", METALOG_PORT="abc")
    assert run.code == 1
    assert run.one_line == (
        "metalog: error: METALOG_PORT='abc' is not allowed: set it to an integer from 1 to "
        "65535, or unset it for the default"
    )


def test_a_batch_size_of_zero_is_a_usage_error() -> None:
    run = metalog("leader", "--bootstrap", NOWHERE, "--batch-size", "0")
    assert run.code == 2
    assert "Traceback" not in run.err
    assert run.err.splitlines()[-1] == (
        "metalog leader: error: argument --batch-size: 0 is not allowed: use 1 or more"
    )


@pytest.mark.parametrize("command", ["show", "follow"])
def test_reading_with_nothing_listening_prints_one_line_naming_the_timeout(command: str) -> None:
    run = metalog(command, "--bootstrap", NOWHERE, "--timeout", "1")
    assert run.code == 69
    assert run.one_line == (
        f"metalog: error: no answer from the Kafka cluster at {NOWHERE} within 1 s: check that "
        "it runs (`metalog status`) and the --bootstrap address"
    )


def test_a_timeout_of_zero_is_a_usage_error() -> None:
    run = metalog("show", "--bootstrap", NOWHERE, "--timeout", "0")
    assert run.code == 2
    assert run.err.splitlines()[-1].endswith("argument --timeout: 0 is not allowed: use a "
                                             "number above 0")  # fmt: skip


def test_exit_codes_follow_the_error() -> None:
    assert exit_code(LeaderUnavailable("x")) == 69
    assert exit_code(FollowerStopped("x")) == 69
    assert exit_code(CommandOutcomeUnknown("c1")) == 75
    assert exit_code(InvalidName("x")) == 1
    assert exit_code(SnapshotError("x")) == 1


@pytest.mark.integration
def test_show_of_a_catalog_without_events_says_so(wire: TopicSet) -> None:
    run = metalog("show", "--bootstrap", wire.bootstrap, "--prefix", wire.prefix,
                  "--catalog", "nosuch", "--timeout", "30")  # fmt: skip
    assert run.code == 1
    assert run.one_line == (
        f"metalog: error: catalog `nosuch` has no events on `{wire.events}` at "
        f"{wire.bootstrap}: check the name (--catalog) and the --prefix; a catalog exists "
        "once its first command is committed (metalog keeps no list of catalogs)"
    )


def test_a_projection_whose_jvm_cannot_start_prints_one_line(tmp_path: Path) -> None:
    run = metalog("project", "--once", "--bootstrap", NOWHERE, "--delta-dir",
                  str(tmp_path / "tables"), "--checkpoint", str(tmp_path / "cp"),
                  JAVA_HOME=str(tmp_path / "no-java"), METALOG_STATE_DIR=str(tmp_path))
    line = run.one_line
    assert run.code != 0
    assert "Spark's JVM did not start" in line and str(tmp_path / "spark.log") in line
    assert str(tmp_path / "no-java") in (tmp_path / "spark.log").read_text()  # the JVM's words
