"""``metalog follow``, ``metalog show`` and ``metalog snapshot``: the read side from a shell."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from rich.console import Console
from rich.table import Table

from events.errors import MetalogError
from events.labels import format_attributes
from events.topics import Topics
from metalog.cli.args import add_cluster_options, positive_float, security
from metalog.cli.metrics import add_metrics_flags, serving_metrics
from metalog.cli.output import (
    add_json_flag,
    change_document,
    image_document,
    print_json,
    snapshot_document,
)
from projector.errors import FollowerError, FollowerStopped, SnapshotError
from projector.fold.image import Image
from projector.follower.follower import Follower
from projector.follower.metrics import FollowerMetrics, liveness, readiness
from projector.follower.watch import WatchEvent
from projector.snapshot.store import list_snapshots, verify_snapshot

DEFAULT_SNAPSHOTS = ".metalog/snapshots"


def follow_demo(bootstrap: str, topics: Topics, catalog: str, timeout: float = 60.0) -> Image:
    """Follow `catalog` until caught up, print it as `metalog show` does, return the image.

    For `make demo`: run it after the demo's commands are committed.

    Raises:
        FollowerError: The follower did not catch up within `timeout` seconds.
    """
    with Follower(bootstrap, catalog, topics=topics) as follower:
        if not follower.wait_caught_up(timeout):
            raise FollowerError(f"the follower of `{catalog}` did not catch up in {timeout:g} s")
        image = follower.current()
    render(Console(), image)
    return image


def render(console: Console, image: Image) -> None:
    """Print a catalog's published view: tables, routes, label rules."""
    view = image.published
    console.print(
        f"catalog [bold]{image.catalog}[/] resource_version {image.resource_version} "
        f"stable_epoch {image.stable_epoch} mode {image.publish_mode} "
        f"pending {len(image.pending)}"
    )
    tables = Table("id", "table", "version", "columns", "partitions", "regions (leader dn)")
    # Keys only: a value loaded from a snapshot is built when it is read.
    for key in sorted(k for k in view.values if k.startswith("__table_info/")):
        info = view.table(int(key.rsplit("/", 1)[1]))
        if info is None:
            continue
        route = view.route(info.table_id)
        regions = ", ".join(
            f"{r.region_id}@{r.leader_datanode}" for r in (route.region_routes if route else ())
        )
        tables.add_row(
            str(info.table_id), f"{info.schema_name}.{info.table_name}", str(info.version),
            ", ".join(f"{c.name} {c.data_type}" for c in info.columns),
            ", ".join(p.name for p in info.partitions), regions,
        )  # fmt: skip
    console.print(tables)
    rules = view.label_rules()
    if rules:
        labels = Table("rule", "labels", "ranges")
        for rule in rules:
            labels.add_row(rule.rule_id, format_attributes(rule.labels), str(len(rule.ranges)))
        console.print(labels)


def _follower(args: argparse.Namespace, **options: Any) -> Follower:
    # The command reports why the follower stopped, in one line: the follower's own
    # line about it and librdkafka's connection chatter would only repeat it.
    logging.getLogger("projector.follower.follower").setLevel(logging.CRITICAL)
    logging.getLogger("metalog.kafka").setLevel(logging.CRITICAL)
    # Each command is a process of its own, so the process-wide freeze is safe;
    # it halves the time of catching up from the log (BENCHMARKS.md, "Follower").
    return Follower(args.bootstrap, args.catalog, topics=Topics(args.prefix), freeze_gc=True,
                    security=security(args, "follower"), **options)  # fmt: skip


def _stopped(follower: Follower, args: argparse.Namespace) -> MetalogError:
    """Why the follower is not (or no longer) reading, as one typed error."""
    failure = follower.failure
    if isinstance(failure, MetalogError):  # the tail tells Kafka's failures in metalog's words
        return failure
    if failure is not None:
        return FollowerStopped(f"the follower stopped: {type(failure).__name__}: {failure}")
    return FollowerStopped(
        f"no answer from the Kafka cluster at {args.bootstrap} within {args.timeout:g} s: "
        "check that it runs (`metalog status`) and the --bootstrap address"
    )


def _caught_up(follower: Follower, args: argparse.Namespace) -> Image:
    """The catalog's image once the follower holds everything committed (`--timeout`)."""
    if follower.wait_caught_up(args.timeout):
        return follower.current()
    if follower.failure is not None or not follower.connected:
        raise _stopped(follower, args)
    raise FollowerError(
        f"catalog `{args.catalog}` did not catch up within {args.timeout:g} s: "
        "give it a longer --timeout"
    )


def _follow(args: argparse.Namespace) -> int:
    console = Console()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def show(change: WatchEvent) -> None:
        if args.json:
            print_json(change_document(change))
            return
        value = "" if change.value is None else change.value.model_dump_json()
        console.print(f"{change.resource_version:>8} {change.op:<6} {change.key} {value}",
                      markup=False, highlight=False)  # fmt: skip

    registry = CollectorRegistry()
    with (
        _follower(args, metrics=FollowerMetrics(registry)) as follower,
        serving_metrics(args, registry, lambda: readiness(follower, args.ready_within),
                        lambda: liveness(follower), "metalog-follower"),
        follower.watch(show, args.from_resource_version),
    ):
        caught_up = follower.wait_caught_up(args.timeout)
        if not caught_up and (follower.failure is not None or not follower.connected):
            raise _stopped(follower, args)
        # With --json, stdout holds only the changes; the banner is for a person.
        Console(stderr=args.json).print(
            f"following `{args.catalog}` on {follower.topics.events} (Ctrl-C stops)")
        try:
            while not stop.wait(0.5) and follower.failure is None:
                pass
        except KeyboardInterrupt:
            return 0
    if follower.failure is not None:
        raise _stopped(follower, args)
    return 0


def _show(args: argparse.Namespace) -> int:
    with _follower(args, snapshot_dir=args.snapshot_dir) as follower:
        image = _caught_up(follower, args)
    if image.resource_version == 0:
        raise FollowerError(
            f"catalog `{args.catalog}` has no events on `{Topics(args.prefix).events}` at "
            f"{args.bootstrap}: check the name (--catalog) and the --prefix; a catalog exists "
            "once its first command is committed (metalog keeps no list of catalogs)"
        )
    if args.json:
        print_json(image_document(image))
    else:
        render(Console(), image)
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    console = Console()
    if args.action == "create":
        with _follower(args, snapshot_dir=args.snapshot_dir) as follower:
            _caught_up(follower, args)
            path = follower.snapshot()
        if args.json:
            print_json({"path": str(path)})
        else:
            console.print(f"wrote {path}")
        return 0
    paths = [Path(p) for p in args.paths] or list_snapshots(Path(args.snapshot_dir), args.catalog)
    failed = 0
    entries: list[dict[str, Any]] = []
    for path in paths:
        try:
            info = verify_snapshot(path)
        except SnapshotError as exc:
            failed += 1
            entries.append({"path": str(path), "ok": False, "error": str(exc)})
            if not args.json:
                console.print(f"[red]BAD[/] {exc}")
            continue
        entries.append(snapshot_document(info))
        if args.json:
            continue
        console.print(
            f"{'OK ' if args.action == 'verify' else ''}{info.path} rv {info.resource_version} "
            f"keys {info.keys} {info.size:,} B next offset {info.position.next_offset}"
        )
    if args.json:
        print_json({"snapshots": entries})
    return 1 if failed else 0


def add_parser(subparsers: Any) -> None:
    """Register ``follow``, ``show`` and ``snapshot``."""
    common = argparse.ArgumentParser(add_help=False)
    add_cluster_options(common)
    common.add_argument("--catalog", default="greptime", help="the catalog (default greptime)")
    add_json_flag(common, "JSON (docs/cli.md)")
    common.add_argument("--timeout", type=positive_float, default=60.0,
                        help="catch-up timeout, seconds")  # fmt: skip
    follow = subparsers.add_parser("follow", parents=[common], help="print published changes live")
    follow.add_argument("--from", dest="from_resource_version", type=int, default=0,
                        help="resource_version to start after (default 0: everything)")  # fmt: skip
    add_metrics_flags(follow)
    follow.add_argument("--ready-within", type=positive_float, default=10.0,
                        help="/readyz answers ready while the follower is at most this many "
                             "seconds behind the log (default 10)")  # fmt: skip
    follow.set_defaults(func=_follow)
    show = subparsers.add_parser("show", parents=[common], help="print the current catalog")
    show.add_argument("--snapshot-dir", default=None, help="start from a snapshot in this folder")
    show.set_defaults(func=_show)
    snap = subparsers.add_parser("snapshot", parents=[common], help="create, list, verify")
    snap.add_argument("action", choices=("create", "list", "verify"))
    snap.add_argument("paths", nargs="*",
                      help="snapshot files to verify (default: all in --snapshot-dir)")
    snap.add_argument("--snapshot-dir", default=DEFAULT_SNAPSHOTS, help="the snapshot folder")
    snap.set_defaults(func=_snapshot)
