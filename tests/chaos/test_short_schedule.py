"""The short chaos schedule (`make test`): every fault once on real processes, 0 anomalies.

Three brokers behind Toxiproxy, two `metalog leader` processes, eight
clients and two followers run a fixed-seed schedule in which each kind of
fault happens at least once; Porcupine then checks the history, and the log
and the followers are checked against each other (chaos.run). On this 2-core
machine it takes about two minutes, most of it the brokers' start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.nemesis import FAULTS, schedule
from chaos.run import RunOptions, run

pytestmark = pytest.mark.integration

SEED = 7
FAULT_SECONDS = 75.0


@pytest.mark.usefixtures("go_toolchain")
def test_every_fault_once_leaves_a_linearizable_history_a_whole_log_and_equal_followers(
    tmp_path: Path,
) -> None:
    steps = schedule(SEED, FAULT_SECONDS)
    assert {step.fault for step in steps} == set(FAULTS)

    result = run(RunOptions(out=tmp_path / "run", steps=steps, seed=SEED))

    assert {fault["fault"] for fault in result.faults} == set(FAULTS)
    assert result.verdict == "ok", f"refuted: see {result.visualization}"
    assert result.log_problems == []
    assert result.followers_equal_log
    assert result.operations["read"]["ok"] > 0
    assert sum(kind.get("ok", 0) for kind in result.operations.values()) > result.operations[
        "read"]["ok"], "no write committed"
