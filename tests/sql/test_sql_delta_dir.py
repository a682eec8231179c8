"""`metalog sql --delta-dir` without a projection there: one clear line, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalog.cli import main


def test_a_directory_without_a_projection_is_one_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sql", "--delta-dir", str(tmp_path), "SELECT * FROM table_info"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"no Delta table `table_info` under {tmp_path}" in err
    assert "metalog project --delta-dir" in err and "Traceback" not in err
