"""A bundle that contradicts its own manifest or its own notes does not verify.

Two signed catalogs, as a three-partition events topic places them (`greptime` in
partition 1, `analytics` in 2), exported with `write_bundle`; then a piece is taken
away and `metalog audit verify --bundle` must exit 65 naming the catalog, the
partition and the first offset the missing records belong at.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from events.checkpoint import Checkpoint, Signer, from_event
from events.intents import CheckpointSigned
from events.topics import partition_for
from metalog.cli import main
from projector.audit.bundle import write_bundle
from projector.audit.verify import Verifier
from projector.checkpoint_keys import public_pem
from tests.audit.tamper import KEY, OTHER_KEY, events, signed_log

FIRST, SECOND = "greptime", "analytics"
LOGS = {FIRST: signed_log(name=FIRST), SECOND: signed_log(tables=4, name=SECOND)}
PARTITION = {FIRST: 1, SECOND: 2}


def _latest(records: Sequence[bytes]) -> Checkpoint:
    return from_event([e for e in events(records) if isinstance(e.intent, CheckpointSigned)][-1])


def _bundle(directory: Path, logs: dict[str, list[bytes]] = LOGS,
            notes: dict[str, Checkpoint] | None = None) -> Path:  # fmt: skip
    """Write a bundle of `logs` (each catalog's records from offset 0 of its partition)."""
    records = [(PARTITION[c], n, r) for c, log in logs.items() for n, r in enumerate(log)]
    ends = {0: 0, **{PARTITION[c]: len(log) for c, log in logs.items()}}
    write_bundle(directory, "metalog.events", records, ends,
                 notes or {c: _latest(log) for c, log in logs.items()},
                 public_pem(KEY.public_key()))  # fmt: skip
    return directory


def _verify(bundle: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["audit", "verify", "--bundle", str(bundle), "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def _fault(bundle: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Any, ...]:
    code, report = _verify(bundle, capsys)
    assert code == 65 and report["ok"] is False
    fault = report["fault"]
    return fault["kind"], fault["catalog"], fault["partition"], fault["offset"], \
        fault["resource_version"]  # fmt: skip


def test_the_partitions_are_where_a_topic_of_three_puts_the_catalogs() -> None:
    assert {c: partition_for(c, 3) for c in PARTITION} == PARTITION  # the older-manifest test


def test_the_whole_bundle_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _verify(_bundle(tmp_path / "b"), capsys)
    assert code == 0 and report["records"] == sum(map(len, LOGS.values()))
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["catalogs"][SECOND] == {
        "partition": 2, "records": len(LOGS[SECOND]), "first_offset": 0,
        "last_offset": len(LOGS[SECOND]) - 1, "resource_version": len(LOGS[SECOND]),
    }  # fmt: skip
    assert manifest["partitions"]["1"]["records"] == len(LOGS[FIRST])


def test_a_bundle_without_its_records_is_truncated_at_its_first_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _bundle(tmp_path / "b")
    shutil.rmtree(bundle / "records")
    assert _fault(bundle, capsys) == ("truncated", FIRST, 1, 0, 1)


def test_a_bundle_without_a_partition_file_names_the_catalog_it_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _bundle(tmp_path / "b")
    (bundle / "records" / "partition-2.bin").unlink()
    assert _fault(bundle, capsys) == ("truncated", SECOND, 2, 0, 1)


def test_records_fewer_than_the_manifest_counts_are_truncated_after_the_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, cut = _bundle(tmp_path / "whole"), _bundle(tmp_path / "cut", {**LOGS,
                                                      FIRST: LOGS[FIRST][:-3]})  # fmt: skip
    shutil.copy(cut / "records" / "partition-1.bin", whole / "records" / "partition-1.bin")
    kept = len(LOGS[FIRST]) - 3
    assert _fault(whole, capsys) == ("truncated", FIRST, 1, kept, kept + 1)


def test_a_catalog_ending_before_the_bundles_own_note_is_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The manifest agrees with the records cut short; the bundle's note was signed later.
    note = _latest(LOGS[FIRST])
    kept = note.resource_version - 2
    bundle = _bundle(tmp_path / "b", {**LOGS, FIRST: LOGS[FIRST][:kept]},
                     {FIRST: note, SECOND: _latest(LOGS[SECOND])})  # fmt: skip
    assert _fault(bundle, capsys) == ("truncated", FIRST, 1, kept, kept + 1)
    assert f"checkpoints/{FIRST}.note" in _verify(bundle, capsys)[1]["fault"]["reason"]


def test_records_past_the_manifest_are_inserted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut, whole = _bundle(tmp_path / "cut", {**LOGS, SECOND: LOGS[SECOND][:-2]}), \
        _bundle(tmp_path / "whole")  # fmt: skip
    shutil.copy(whole / "records" / "partition-2.bin", cut / "records" / "partition-2.bin")
    at = len(LOGS[SECOND]) - 2
    assert _fault(cut, capsys) == ("inserted", SECOND, 2, at, at + 1)


def test_a_note_in_the_bundle_signed_by_another_key_is_forged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = Signer(OTHER_KEY).sign(_latest(LOGS[FIRST]))
    bundle = _bundle(tmp_path / "b", notes={FIRST: other, SECOND: _latest(LOGS[SECOND])})
    kind, catalog, *_ = _fault(bundle, capsys)
    assert (kind, catalog) == ("forged", FIRST)


def test_a_bundle_without_a_readable_manifest_does_not_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _bundle(tmp_path / "b")
    for damage, said in ((lambda p: p.write_text("{not json"), "unreadable"),
                         (Path.unlink, "missing")):  # fmt: skip
        damage(bundle / "manifest.json")
        capsys.readouterr()
        assert main(["audit", "verify", "--bundle", str(bundle), "--json"]) == 65
        out, err = capsys.readouterr()
        [line] = err.splitlines()
        assert out == "" and line.startswith(f"metalog: error: {bundle}/manifest.json is ")
        assert said in line and "export it again" in line
    assert main(["audit", "verify", "--bundle", str(tmp_path / "nothing")]) == 1  # no bundle


def test_an_older_manifest_still_checks_the_catalogs_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _bundle(tmp_path / "b")
    manifest = json.loads((bundle / "manifest.json").read_text())
    older = {k: v for k, v in manifest.items() if k != "partitions"}
    (bundle / "manifest.json").write_text(json.dumps({**older, "catalogs": sorted(LOGS)}))
    assert _verify(bundle, capsys)[0] == 0
    (bundle / "records" / "partition-2.bin").unlink()
    # No offsets in an older manifest: the partition is the one the name maps to.
    assert _fault(bundle, capsys) == ("truncated", SECOND, 2, -1, 1)


def test_a_kept_note_of_a_catalog_absent_from_the_log_names_its_partition() -> None:
    note = _latest(LOGS[FIRST])
    verifier = Verifier(KEY.public_key(), {"kept.note": note}, ends={0: 0, 1: 40, 2: 0})
    for offset, record in enumerate(signed_log(name="sales"), start=5):  # sales: partition 1
        verifier.feed(partition_for("sales", 3), offset, record)
    fault = verifier.finish().fault
    assert fault is not None
    assert (fault.kind, fault.catalog, fault.partition, fault.offset) == ("truncated", FIRST, 1, 5)
