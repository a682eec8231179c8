"""``metalog audit verify | checkpoint | export``: check a log, keep a witness, bundle it offline.

docs/audit.md says what each checks; docs/cli.md gives the ``--json`` shapes.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from events.checkpoint import Checkpoint, parse_note, render_time
from events.topics import Topics
from metalog.cli.args import add_cluster_options, security
from metalog.cli.output import add_json_flag, print_json
from metalog.cli.progress import LongProgress, counted
from metalog.errors import AuditError
from projector.audit.bundle import Bundle, write_bundle
from projector.audit.faults import AuditFailed, Fault, Report
from projector.audit.raw import NotAnEvent, parse
from projector.audit.read import Batch, Record, TopicLog, batched, verify_batches
from projector.audit.verify import Verifier
from projector.checkpoint_keys import KeyFileError, load_public_key, public_pem, read_public_key


def _source(args: argparse.Namespace) -> tuple[Iterator[Record], dict[int, int]]:
    """The records to read: the bundle's (`--bundle`) or the events topic's."""
    if getattr(args, "bundle", None):
        bundle = Bundle(Path(args.bundle))
        return ((p, o, v, False) for p, o, v in bundle.records()), bundle.ends
    log = TopicLog(args.bootstrap, Topics(args.prefix).events, security(args, "follower"))
    return log.hashed_records(), log.ends


def _verifier(args: argparse.Namespace, key: Any, fold: bool) -> tuple[Verifier, Iterator[Batch]]:
    """The verifier of the log to read and its records a batch at a time (the topic's as its
    reader takes them). A bundle's own checkpoint notes are kept notes, as `--against` is,
    and its records must be all its manifest says."""
    kept = {} if not getattr(args, "against", None) else {args.against: _kept(args.against)}
    if getattr(args, "bundle", None):
        bundle = Bundle(Path(args.bundle))
        kept.update(bundle.notes())
        records = ((p, o, v, False) for p, o, v in bundle.records())
        return (Verifier(key, kept, args.catalog, fold, bundle.contents, bundle.ends),
                batched(records))  # fmt: skip
    log = TopicLog(args.bootstrap, Topics(args.prefix).events, security(args, "follower"))
    return Verifier(key, kept, args.catalog, fold, ends=log.ends), log.batches()


def _public_key(args: argparse.Namespace) -> tuple[Any, str]:
    """The key that checks signatures, and where it came from ("" when none)."""
    if args.public_key:
        return read_public_key(Path(args.public_key)), args.public_key
    if getattr(args, "bundle", None):
        pem = Bundle(Path(args.bundle)).public_key_pem()
        if pem is not None:
            return load_public_key(pem, f"{args.bundle}/public_key.pem"), "bundle"
    return None, ""


def _kept(path: str) -> Checkpoint:
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"cannot read the checkpoint note {path}: {exc}") from exc
    return parse_note(text)


def _run(args: argparse.Namespace, key: Any, fold: bool) -> tuple[Verifier, Report, float]:
    progress = LongProgress(Console(stderr=True), "verifying", "records")
    started = time.perf_counter()
    verifier, batches = _verifier(args, key, fold)
    try:
        report = verify_batches(counted(batches, progress, _records), verifier)
    finally:
        progress.close()
    return verifier, report, time.perf_counter() - started


def _records(batch: Batch) -> int:
    return len(batch[2])


def _fault_document(fault: Fault | None) -> dict[str, Any] | None:
    if fault is None:
        return None
    return {"kind": fault.kind, "catalog": fault.catalog, "partition": fault.partition,
            "offset": fault.offset, "resource_version": fault.resource_version,
            "reason": fault.reason}  # fmt: skip


def report_document(report: Report, seconds: float, key_source: str) -> dict[str, Any]:
    """`metalog audit verify --json` (docs/cli.md)."""
    return {
        "ok": report.fault is None, "records": report.records, "seconds": round(seconds, 3),
        "records_per_second": round(report.records / seconds) if seconds > 0 else None,
        "signatures_checked": report.signatures_checked, "public_key": key_source or None,
        "fold_checked": report.fold_checked, "fault": _fault_document(report.fault),
        "catalogs": [
            {"catalog": s.catalog, "events": s.events, "resource_version": s.resource_version,
             "chain_hash": s.chain_hash, "leader_epoch": s.leader_epoch,
             "checkpoints": s.checkpoints, "signed_through": s.signed_through}
            for s in report.catalogs.values()
        ],
    }  # fmt: skip


def _verify(args: argparse.Namespace) -> int:
    key, key_source = _public_key(args)
    _, report, seconds = _run(args, key, fold=not args.skip_fold)
    if args.json:
        print_json(report_document(report, seconds, key_source))
    if report.fault is not None:
        raise AuditFailed(report.fault)
    if not args.json:
        rate = f"{report.records / seconds:,.0f}" if seconds > 0 else "-"
        print(f"verified {report.records:,} records in {seconds:.2f} s ({rate} records/s); "
              + ("signatures checked" if key is not None else "no public key: signatures "
                 "NOT checked") + ("" if args.skip_fold else "; every event folded"))  # fmt: skip
        for s in report.catalogs.values():
            print(f"catalog {s.catalog}: resource_version {s.resource_version}, chain hash "
                  f"{s.chain_hash[:16]}…, leader_epoch {s.leader_epoch}, {s.checkpoints} "
                  f"checkpoint(s), signed through {s.signed_through}")  # fmt: skip
    return 0


def _checkpoint(args: argparse.Namespace) -> int:
    key, _ = _public_key(args)
    verifier, report, _ = _run(args, key, fold=False)
    if report.fault is not None:
        raise AuditFailed(report.fault)
    catalog = args.catalog or _only_catalog(report)
    checkpoint = verifier.latest_checkpoint(catalog)
    if checkpoint is None:
        raise AuditError(f"the log holds no checkpoint of catalog `{catalog}`: start its "
                         "leader with --signing-key (docs/audit.md)")
    try:
        Path(args.out).write_text(checkpoint.note(), "utf-8")
    except OSError as exc:
        raise KeyFileError(f"cannot write the note {args.out}: {exc}") from exc
    document = {"path": args.out, "catalog": checkpoint.catalog,
                "resource_version": checkpoint.resource_version,
                "chain_hash": checkpoint.chain_hash.hex(), "leader_epoch": checkpoint.leader_epoch,
                "time": render_time(checkpoint.occurred_micros),
                "key_id": checkpoint.key_id.hex(),
                "signature_checked": key is not None}  # fmt: skip
    if args.json:
        print_json(document)
    else:
        print(f"kept {args.out}: catalog {catalog} at resource_version "
              f"{checkpoint.resource_version}, signed {document['time']} (key id "
              f"{document['key_id']})")  # fmt: skip
    return 0


def _only_catalog(report: Report) -> str:
    if len(report.catalogs) != 1:
        raise AuditError(f"the log holds {len(report.catalogs)} catalogs: name one with --catalog")
    return next(iter(report.catalogs))


def _export(args: argparse.Namespace) -> int:
    key = read_public_key(Path(args.public_key)) if args.public_key else None
    records, ends = _source(args)
    latest: dict[str, Checkpoint] = {}

    def noting() -> Iterator[tuple[int, int, bytes]]:
        for partition, offset, value, _ in records:
            try:
                raw = parse(value)
            except NotAnEvent:
                raw = None
            if raw is not None and args.catalog not in (None, raw.catalog):
                continue
            if raw is not None and raw.intent == "CheckpointSigned":
                latest[raw.catalog] = raw.checkpoint()
            yield partition, offset, value

    manifest = write_bundle(Path(args.to), Topics(args.prefix).events, noting(), ends,
                            latest, None if key is None else public_pem(key))  # fmt: skip
    document = {"path": args.to, "records": manifest["records"],
                "catalogs": sorted(manifest["catalogs"]), "checkpoints": len(latest),
                "public_key": key is not None}  # fmt: skip
    if args.json:
        print_json(document)
    else:
        print(f"exported {manifest['records']:,} records to {args.to} ({len(latest)} "
              f"catalog(s) with a checkpoint; verify with `metalog audit verify --bundle "
              f"{args.to}`)")  # fmt: skip
    return 0


def add_commands(audit: Any) -> None:
    """Register ``audit verify``, ``audit checkpoint`` and ``audit export``."""
    common = argparse.ArgumentParser(add_help=False)
    add_cluster_options(common)
    common.add_argument("--catalog", default=None, help="this catalog only (default: all)")
    common.add_argument("--public-key", default=None,
                        help="the checkpoints' public key (PEM, `metalog keys generate`)")
    add_json_flag(common, "JSON (docs/cli.md)")
    verify = audit.add_parser("verify", parents=[common],
                              help="check the log; name the first bad record and the fault")
    verify.add_argument("--against", default=None,
                        help="a kept checkpoint note the log must still contain")
    verify.add_argument("--bundle", default=None, help="verify an exported bundle, no broker")
    verify.add_argument("--skip-fold", action="store_true",
                        help="skip re-checking requirements and publication order (faster)")
    verify.set_defaults(func=_verify)
    checkpoint = audit.add_parser("checkpoint", parents=[common],
                                  help="write the latest checkpoint as a note to keep")
    checkpoint.add_argument("--out", required=True, help="the note's file")
    checkpoint.add_argument("--bundle", default=None, help="read an exported bundle, no broker")
    checkpoint.set_defaults(func=_checkpoint)
    export = audit.add_parser("export", parents=[common],
                              help="write an offline bundle: records, JSONL, schemas, checkpoints")
    export.add_argument("--to", required=True, help="a new directory")
    export.set_defaults(func=_export)
