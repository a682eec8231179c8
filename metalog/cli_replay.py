"""``metalog replay``: a catalog as it was at a resource_version or a time."""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from events.event import Event
from events.topics import Topics
from metalog.cli_args import add_cluster_options, security
from metalog.cli_follow import DEFAULT_SNAPSHOTS, render
from metalog.cli_json import add_json_flag, image_document, print_json
from projector.fold.image import Image
from projector.replay.asof import replay_as_of
from projector.replay.point import parse_point
from projector.replay.source import LogReader

LONG_S = 2.0
"""A replay still running after this long shows its progress bar (on a terminal)."""


class ReplayProgress:
    """A rich progress bar on stderr, with events/s, shown once a replay runs `LONG_S`."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._started = time.monotonic()
        self._events = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, reader: LogReader, event: Event) -> None:
        """Count one event; draw the bar every 1000 events once the replay is long."""
        self._events += 1
        if self._events % 1000:
            return
        elapsed = time.monotonic() - self._started
        if self._bar is None:
            if elapsed < LONG_S or not self._console.is_terminal:
                return
            self._bar = Progress(
                TextColumn("replaying"), BarColumn(), TextColumn("{task.completed:,} records"),
                TextColumn("{task.fields[rate]:,.0f} events/s"), TimeElapsedColumn(),
                console=self._console, transient=True,
            )  # fmt: skip
            self._bar.start()
            self._task = self._bar.add_task("replay", total=reader.records, rate=0.0)
        assert self._task is not None
        self._bar.update(self._task, completed=reader.offset + 1 - reader.start,
                         rate=self._events / elapsed)  # fmt: skip

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.stop()


def image_at(args: argparse.Namespace) -> Image:
    """The replayed image of ``--catalog`` at ``--as-of`` (the options `add_point_options` adds)."""
    progress = ReplayProgress(Console(stderr=True))
    try:
        return replay_as_of(
            args.bootstrap, Topics(args.prefix), args.catalog, parse_point(args.as_of),
            Path(args.snapshot_dir) if args.snapshot_dir else None, progress,
            security(args, "follower"),
        )  # fmt: skip
    finally:
        progress.close()


def replay_document(image: Image) -> dict[str, Any]:
    """`metalog replay --json`: `metalog show --json`'s shape plus ``head`` (tables, label_rules).

    The top level is the published view; ``head`` holds everything committed.
    """
    document = image_document(image)
    head = image_document(dataclasses.replace(image, published=image.head))
    document["head"] = {"tables": head["tables"], "label_rules": head["label_rules"]}
    return document


def _replay(args: argparse.Namespace) -> int:
    image = image_at(args)
    if args.json:
        print_json(replay_document(image))
        return 0
    console = Console()
    render(console, image)
    if image.published is not image.head:
        console.print("[bold]head[/] (every committed change, published or not):")
        render(console, dataclasses.replace(image, published=image.head))
    return 0


def add_log_options(parser: argparse.ArgumentParser) -> None:
    """The options of a command that reads a catalog's log: cluster, prefix, catalog."""
    add_cluster_options(parser)
    parser.add_argument("--catalog", default="greptime", help="the catalog (default greptime)")


def add_parser(subparsers: Any) -> None:
    """Register ``replay``."""
    replay = subparsers.add_parser("replay", help="print a catalog as it was at a point")
    add_log_options(replay)
    replay.add_argument(
        "--as-of",
        required=True,
        metavar="RV|TIME",
        help="a resource_version or an ISO 8601 time (UTC unless it says)",
    )
    replay.add_argument("--snapshot-dir", default=DEFAULT_SNAPSHOTS,
                        help="start from the newest snapshot at or below the point in this "
                             "folder (default .metalog/snapshots; '' for none)")  # fmt: skip
    add_json_flag(replay, "JSON (docs/cli.md)")
    replay.set_defaults(func=_replay)
