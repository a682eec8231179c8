"""Replay, history, diff and the history page against a real broker; the page in chromium."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from events.codec import encode_event
from metalog.cli import main
from metalog.cli.replay import replay_document
from projector.follower.follower import Follower
from projector.replay.asof import replay_as_of
from projector.replay.point import Point
from projector.replay.source import LogReader
from tests.audit.scripted import EXPECTED_U, lifecycle
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import CATALOG, produce, produce_raw, random_log

pytestmark = pytest.mark.integration


def test_as_of_replay_equals_what_a_follower_published_at_random_points(
    wire: TopicSet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = random_log(240, seed=18)
    events = catalog.events
    cuts = [*sorted(random.Random(18).sample(range(1, len(events)), 6)), len(events)]
    published = {}
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics,
                  snapshot_dir=tmp_path) as follower:  # fmt: skip
        done = 0
        for cut in cuts:
            produce(wire, events[done:cut])  # one transaction: the follower publishes at its end
            done = cut
            published[cut] = follower.wait_for(cut, timeout=30)
            assert published[cut].resource_version == cut
            if cut == cuts[3]:
                follower.snapshot()
    for cut, image in published.items():
        assert replay_as_of(wire.bootstrap, wire.topics, CATALOG, Point(cut)) == image
        # from the snapshot where it lies at or below the point, else from the log
        assert replay_as_of(wire.bootstrap, wire.topics, CATALOG, Point(cut), tmp_path) == image
        moment = events[cut - 1].occurred_at
        assert replay_as_of(wire.bootstrap, wire.topics, CATALOG, Point(time=moment),
                            tmp_path) == image  # fmt: skip
    where = ["--bootstrap", wire.bootstrap, "--prefix", wire.prefix, "--catalog", CATALOG]
    assert main(["replay", *where, "--as-of", str(cuts[2]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(
        json.dumps(replay_document(published[cuts[2]])))  # fmt: skip
    assert main(["replay", *where, "--as-of", str(len(events) + 5)]) == 1
    assert "past the end" in capsys.readouterr().err


def test_history_and_diff_commands_over_the_scripted_lifecycle(
    wire: TopicSet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    produce(wire, lifecycle().events)
    where = ["--bootstrap", wire.bootstrap, "--prefix", wire.prefix, "--catalog", CATALOG]
    page = tmp_path / "u.html"
    assert main(["audit", "history", "public.u", *where, "--json", "--html", str(page)]) == 0
    history = json.loads(capsys.readouterr().out)
    rows = [(c["resource_version"], c["table_id"], c["version"], c["statement"])
            for c in history["changes"]]  # fmt: skip
    assert rows == EXPECTED_U
    assert history["names"] == ["public.t", "public.u"] and history["table_ids"] == [1, 2, 4]
    assert main(["audit", "history", "--table-id", "1", *where, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["table_ids"] == [1, 2, 4]
    assert main(["audit", "diff", *where, "--from", "3", "--to", "7", "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert {t["table"] for t in diff["tables"]} == {"public.u", "public.p"}
    assert diff["kinds"]["__label_rule"] == {"added": 1, "changed": 0, "removed": 0}
    assert main(["audit", "diff", *where, "--from", "3", "--to", "7"]) == 0
    assert "public.u: TRUNCATE TABLE public.u;" in capsys.readouterr().out
    assert main(["audit", "history", "public.nope", *where]) == 1
    assert "public.nope" in capsys.readouterr().err
    _renders_in_chromium(page, tmp_path)


def test_the_log_read_in_batches_is_the_log_read_record_by_record(wire: TopicSet) -> None:
    """Another catalog's records share the partition and commit markers sit between the
    transactions: the batches hold the catalog's records, in order, and nothing else."""
    ours = [encode_event(e) for e in lifecycle().events]
    produce_raw(wire, ours[:4])
    produce_raw(wire, [b"another catalog's record"] * 3, key="other")
    produce_raw(wire, ours[4:])
    one_by_one = LogReader(wire.bootstrap, wire.topics, CATALOG)
    assert list(one_by_one.raw()) == ours
    reader = LogReader(wire.bootstrap, wire.topics, CATALOG)
    batches = list(reader.raw_batches())
    assert [r for batch in batches for r in batch] == ours and all(batches)
    assert reader.offset == one_by_one.offset == reader.end - 2  # the last record, its marker


def _renders_in_chromium(page: Path, tmp_path: Path) -> None:
    """The page opens in headless chromium: its script ran, the timeline drew, it is not blank."""
    browser = shutil.which("chromium")
    assert browser is not None, "chromium is missing: `make test` installs it"
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    assert 'data-rendered="yes"' in dom  # set by the page's script after it ran
    assert "leader-a: " not in dom  # leader elections are no change of the table
    assert "tester: 7 change(s)" in dom and "bob: 1 change(s)" in dom
    assert dom.count("<circle") == len(EXPECTED_U)
    shot = tmp_path / "u.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
                   capture_output=True, timeout=120, check=True)  # fmt: skip
    assert len(set(_rows(shot))) > 10  # many distinct pixel rows: text and the timeline drew


def _rows(png: Path) -> list[bytes]:
    """The decoded scanlines of an 8-bit RGB(A) PNG, filter bytes included (enough to see ink)."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, width = 8, b"", 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + size]
        if kind == b"IHDR":
            width, channels = int.from_bytes(body[:4], "big"), {2: 3, 6: 4}[body[9]]
        elif kind == b"IDAT":
            idat += body
        at += size + 12
    raw = zlib.decompress(idat)
    stride = 1 + width * channels
    return [raw[i : i + stride] for i in range(0, len(raw), stride)]
