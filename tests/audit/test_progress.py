"""Progress bars of long commands: a rate on stderr, on a terminal, once the work is long."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from events.topics import Topics
from metalog.cli import progress as long_work
from metalog.cli.progress import LongProgress, counted
from metalog.cli.replay import ReplayProgress
from projector.replay.source import LogReader
from tests.audit.scripted import lifecycle


def _drive(console: Console) -> None:
    reader = LogReader("unused:9092", Topics(), "c", start=0, end=5000)  # never connects
    event = lifecycle().events[0]
    progress = ReplayProgress(console)
    for offset in range(3000):
        reader.offset = offset
        progress(reader, event)
    progress.close()


def test_a_long_replay_on_a_terminal_shows_events_per_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(long_work, "LONG_S", 0.0)
    out = io.StringIO()
    _drive(Console(file=out, force_terminal=True, width=120))
    assert "events/s" in out.getvalue() and "replaying" in out.getvalue()


def test_no_bar_off_a_terminal_or_on_a_short_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(long_work, "LONG_S", 0.0)
    piped = io.StringIO()
    _drive(Console(file=piped, force_terminal=False))
    assert piped.getvalue() == ""
    monkeypatch.setattr(long_work, "LONG_S", 3600.0)
    terminal = io.StringIO()
    _drive(Console(file=terminal, force_terminal=True))
    assert terminal.getvalue() == ""


def test_long_work_counted_by_batch_shows_records_per_second_and_passes_every_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(long_work, "LONG_S", 0.0)
    out = io.StringIO()
    progress = LongProgress(Console(file=out, force_terminal=True, width=120), "verifying",
                            "records")  # fmt: skip
    batches = [(0, [o], [b"x"], b"\x00") for o in range(3)]
    assert list(counted(iter(batches), progress, lambda batch: len(batch[2]))) == batches
    progress.close()
    assert "verifying" in out.getvalue() and "records/s" in out.getvalue()
