"""``metalog audit history`` and ``metalog audit diff``: a table's changes, two points compared."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from events.topics import Topics
from metalog.cli.args import security
from metalog.cli.follow import DEFAULT_SNAPSHOTS
from metalog.cli.output import add_json_flag, print_json
from metalog.cli.progress import LongProgress, counted
from metalog.cli.replay import ReplayProgress, add_log_options
from projector.audit.diff import catalog_diff
from projector.audit.page import history_page
from projector.errors import ReplayError
from projector.replay.asof import open_at
from projector.replay.history import history_of
from projector.replay.point import parse_point


def _history(args: argparse.Namespace) -> int:
    if (args.table is None) == (args.table_id is None):
        raise ReplayError("name the table: SCHEMA.TABLE or --table-id N (one of them)")
    progress = LongProgress(Console(stderr=True), "reading", "records")
    try:
        history = history_of(args.bootstrap, Topics(args.prefix), args.catalog, args.table,
                             args.table_id, security(args, "follower"),
                             lambda batches: counted(batches, progress, len))  # fmt: skip
    finally:
        progress.close()
    if args.html:
        try:
            Path(args.html).write_text(history_page(history), encoding="utf-8")
        except OSError as exc:
            raise ReplayError(f"cannot write {args.html}: {exc.strerror}") from exc
    if args.json:
        print_json(history.document())
        return 0
    console = Console()
    console.print(f"table [bold]{' → '.join(history.names)}[/] of catalog {history.catalog}, "
                  f"ids {', '.join(map(str, history.table_ids))}")  # fmt: skip
    rows = Table("rv", "time", "actor", "id", "version", "epoch", "statement", "keys")
    for c in history.changes:
        keys = "\n".join(f"{k.op} {k.key}" for k in c.keys)
        rows.add_row(str(c.resource_version), c.occurred_at.isoformat(timespec="seconds"),
                     c.actor, str(c.table_id), str(c.version), str(c.schema_epoch), c.statement,
                     keys)  # fmt: skip
    console.print(rows)
    if args.html:
        console.print(f"wrote {args.html}")
    return 0


def _diff(args: argparse.Namespace) -> int:
    to = parse_point(args.to_point)
    progress = ReplayProgress(Console(stderr=True))  # the replay to --from, the long part
    try:
        start, events = open_at(args.bootstrap, Topics(args.prefix), args.catalog,
                                parse_point(args.from_point),
                                Path(args.snapshot_dir) if args.snapshot_dir else None,
                                progress, security(args, "follower"))  # fmt: skip
    finally:
        progress.close()
    try:
        if to.resource_version is not None and to.resource_version < start.resource_version:
            raise ReplayError(f"--to {args.to_point} lies before --from {args.from_point}")
        diff, _ = catalog_diff(start, events, to)
    finally:
        events.close()
    if args.json:
        print_json(diff.document())
        return 0
    console = Console()
    console.print(f"catalog {diff.catalog}: resource_version {diff.from_resource_version} → "
                  f"{diff.to_resource_version}")  # fmt: skip
    kinds = Table("kind", "added", "changed", "removed")
    for kind, counts in diff.counts().items():
        kinds.add_row(kind, *(str(counts[op]) for op in ("added", "changed", "removed")))
    console.print(kinds)
    for table, summary in diff.tables.items():
        console.print(f"{table}: {summary}", markup=False, highlight=False)
    return 0


def _table_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a table id (an integer)") from None


def add_commands(audit: Any) -> None:
    """Register ``audit history`` and ``audit diff`` in the ``audit`` group."""
    history = audit.add_parser("history", help="every change of one table")
    add_log_options(history)
    history.add_argument("table", nargs="?", metavar="SCHEMA.TABLE",
                         help="the table (the last one to hold the name)")  # fmt: skip
    history.add_argument("--table-id", type=_table_id, help="the table that had this id")
    history.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page")
    add_json_flag(history, "JSON (docs/cli.md)")
    history.set_defaults(func=_history)
    diff = audit.add_parser("diff", help="what changed between two points")
    add_log_options(diff)
    diff.add_argument("--from", dest="from_point", required=True, metavar="RV|TIME")
    diff.add_argument("--to", dest="to_point", required=True, metavar="RV|TIME")
    diff.add_argument("--snapshot-dir", default=DEFAULT_SNAPSHOTS,
                      help="start from the newest snapshot at or below --from")  # fmt: skip
    add_json_flag(diff, "JSON (docs/cli.md)")
    diff.set_defaults(func=_diff)
