"""`metalog keys generate` and `metalog audit` with no broker: JSON shapes, files, errors."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from events.checkpoint import key_id, parse_note
from projector.audit.bundle import write_bundle
from projector.checkpoint_keys import public_pem, read_public_key
from tests.audit.tamper import KEY, signed_log
from tests.stack.test_cli_errors import metalog

VERIFY_KEYS = {"ok", "records", "seconds", "records_per_second", "signatures_checked",
               "public_key", "fold_checked", "fault", "catalogs"}  # fmt: skip
CATALOG_KEYS = {"catalog", "events", "resource_version", "chain_hash", "leader_epoch",
                "checkpoints", "signed_through"}  # fmt: skip
FAULT_KEYS = {"kind", "catalog", "partition", "offset", "resource_version", "reason"}


def _document(*args: str) -> tuple[int, Any, str]:
    run = metalog(*args, "--json")
    assert "Traceback" not in run.err
    [line] = run.out.splitlines()
    return run.code, json.loads(line), run.err


def _bundle(directory: Path, records: list[bytes]) -> Path:
    write_bundle(directory, "metalog.events", ((0, n, r) for n, r in enumerate(records)),
                 {0: len(records)}, {}, public_pem(KEY.public_key()))  # fmt: skip
    return directory


def test_keys_generate_writes_a_private_key_only_its_owner_reads(tmp_path: Path) -> None:
    code, made, _ = _document("keys", "generate", "--out", str(tmp_path / "keys"))
    assert code == 0 and set(made) == {"private_key", "public_key", "key_id"}
    private, public = Path(made["private_key"]), Path(made["public_key"])
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert key_id(read_public_key(public)).hex() == made["key_id"]
    again = metalog("keys", "generate", "--out", str(tmp_path / "keys"))
    assert again.code == 1 and again.one_line.startswith("metalog: error: ")
    assert "never overwritten" in again.one_line


def test_verify_a_bundle_offline_gives_the_documented_shape(tmp_path: Path) -> None:
    records = signed_log()
    bundle = _bundle(tmp_path / "b", records)
    code, report, _ = _document("audit", "verify", "--bundle", str(bundle))
    assert code == 0 and set(report) == VERIFY_KEYS and report["fault"] is None
    [catalog] = report["catalogs"]
    assert set(catalog) == CATALOG_KEYS and catalog["resource_version"] == len(records)
    assert report["signatures_checked"] and report["public_key"] == "bundle"
    code, kept, _ = _document("audit", "checkpoint", "--bundle", str(bundle),
                              "--out", str(tmp_path / "kept.note"))  # fmt: skip
    assert code == 0 and set(kept) == {
        "path",
        "catalog",
        "resource_version",
        "chain_hash",
        "leader_epoch",
        "time",
        "key_id",
        "signature_checked",
    }
    note = parse_note((tmp_path / "kept.note").read_text())
    assert note.resource_version == kept["resource_version"] and note.verifies(KEY.public_key())


def test_a_bad_bundle_exits_65_naming_the_fault_in_one_line(tmp_path: Path) -> None:
    records = signed_log()
    bundle = _bundle(tmp_path / "b", [*records[:5], *records[6:]])
    code, report, err = _document("audit", "verify", "--bundle", str(bundle))
    assert code == 65 and report["ok"] is False and set(report["fault"]) == FAULT_KEYS
    assert (report["fault"]["kind"], report["fault"]["offset"]) == ("deleted", 5)
    [line] = err.splitlines()
    assert line.startswith("metalog: error: the log does not verify: deleted at partition 0 "
                           "offset 5")  # fmt: skip


def test_a_missing_bundle_or_key_file_is_one_line(tmp_path: Path) -> None:
    run = metalog("audit", "verify", "--bundle", str(tmp_path / "nothing"))
    assert run.code == 1 and "is not a bundle" in run.one_line
    run = metalog("leader", "--signing-key", str(tmp_path / "no.key"))
    assert run.code == 1 and "cannot read the signing key" in run.one_line
