"""``metalog replay``: a catalog as it was at a resource_version or a time."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from rich.console import Console

from events.event import Event
from events.topics import Topics
from metalog.cli.args import add_cluster_options, security
from metalog.cli.follow import DEFAULT_SNAPSHOTS, render
from metalog.cli.output import add_json_flag, image_document, print_json
from metalog.cli.progress import LongProgress
from projector.fold.image import Image
from projector.replay.asof import replay_as_of
from projector.replay.point import parse_point
from projector.replay.source import LogReader


class ReplayProgress:
    """The replay's `LongProgress`: told of every event, it draws every 1,000."""

    def __init__(self, console: Console) -> None:
        self._events = 0
        self._bar = LongProgress(console, "replaying", "events")

    def __call__(self, reader: LogReader, event: Event) -> None:
        """Count one event; update the bar every 1000 events."""
        self._events += 1
        if self._events % 1000 == 0:
            self._bar.update(self._events, reader.offset + 1 - reader.start, reader.records)

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()


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
