"""The Porcupine checker (chaos/go/checker) gives the right verdict on hand-made histories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.errors import CheckerError
from chaos.history import Operation, Seen, check, write

FAMILIES = [("a", "b")]
DATA = Path(__file__).parent / "data"


def _create(client: int, call: int, ret: int, table_id: int = 7) -> Operation:
    return Operation(client, "create", 0, 0, None, call, ret, "ok", table_id=table_id, version=1)


def _alter(client: int, expected: int, call: int, ret: int | None, outcome: str = "ok",
           error: str | None = None, version: int | None = None) -> Operation:  # fmt: skip
    return Operation(client, "alter", 0, 0, expected, call, ret, outcome,  # type: ignore[arg-type]
                     error=error, table_id=7,
                     version=expected + 1 if version is None else version)  # fmt: skip


def _read(client: int, call: int, ret: int, version: int) -> Operation:
    return Operation(client, "read", 0, 0, None, call, ret, "ok", read=(Seen(True, 7, version),
                                                                         Seen()))  # fmt: skip


@pytest.mark.usefixtures("go_toolchain")
def test_a_linearizable_history_with_an_unknown_outcome_is_ok(tmp_path: Path) -> None:
    history = [
        _create(0, 0, 10),
        _alter(1, 1, 20, None, "unknown", "CommandOutcomeUnknown"),  # lands late
        _read(2, 30, 40, 1),
        _alter(3, 1, 35, 45, "rejected", "VersionConflict", version=2),
        _read(2, 50, 60, 2),
        _alter(2, 2, 61, 70),
    ]
    verdict = check(write(tmp_path / "history.json", FAMILIES, history))
    assert verdict.result == "ok"
    assert (verdict.operations, verdict.unknown) == (6, 1)
    assert verdict.visualization is None


@pytest.mark.usefixtures("go_toolchain")
def test_a_lost_acked_write_is_refuted_and_its_page_is_saved_next_to_the_history(
    tmp_path: Path,
) -> None:
    history = [
        _create(0, 0, 10),
        _alter(1, 1, 20, 30),  # acked at 30 ...
        _read(2, 40, 50, 1),  # ... and a read that began after it does not see it
    ]
    verdict = check(write(tmp_path / "history.json", FAMILIES, history))
    assert verdict.result == "refuted"
    assert verdict.visualization == tmp_path / "history.html"
    assert "alter a @v1" in verdict.visualization.read_text()


@pytest.mark.usefixtures("go_toolchain")
def test_two_writes_on_one_version_both_acked_are_refuted(tmp_path: Path) -> None:
    history = [_create(0, 0, 10), _alter(1, 1, 20, 40), _alter(2, 1, 21, 41)]
    assert check(write(tmp_path / "history.json", FAMILIES, history)).result == "refuted"


@pytest.mark.usefixtures("go_toolchain")
def test_a_history_that_names_no_family_is_a_checker_error(tmp_path: Path) -> None:
    path = write(tmp_path / "history.json", [], [_create(0, 0, 10)])
    with pytest.raises(CheckerError, match="names family 0"):
        check(path)


@pytest.mark.usefixtures("go_toolchain")
def test_the_stale_read_the_chaos_run_found_is_refuted(tmp_path: Path) -> None:
    """Family f1 of the seed-7 run with `--reads caught-up` (docs/reliability.md, "Anomalies"),
    up to the read that missed its own client's acked alter; without that read it is ok."""
    recorded = json.loads((DATA / "stale-read-after-ack.json").read_text())
    refuted = tmp_path / "refuted.json"
    refuted.write_text(json.dumps(recorded))
    verdict = check(refuted)
    assert verdict.result == "refuted"
    assert verdict.visualization is not None and verdict.visualization.exists()
    recorded["operations"] = recorded["operations"][:-1]
    linearizable = tmp_path / "ok.json"
    linearizable.write_text(json.dumps(recorded))
    assert check(linearizable).result == "ok"
