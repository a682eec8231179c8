"""``metalog leader``: serve the commands of the catalogs this process comes to own."""

from __future__ import annotations

import argparse
import gc
import signal
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from events.topics import Topics
from metalog.cli.args import add_cluster_options, positive_float, positive_int, security
from metalog.cli.metrics import add_metrics_flags, serving_metrics
from metalog.cli.output import add_json_flag, log_status
from producers.leader.health import liveness, readiness
from producers.leader.leader import Leader
from producers.leader.local import CheckpointSchedule
from producers.leader.metrics import LeaderMetrics
from producers.leader.owner import LeaderOptions
from projector.checkpoint_keys import load_signer


def _leader(args: argparse.Namespace) -> int:
    log_status(args.json)
    checkpoints = None
    if args.signing_key:
        signer = load_signer(Path(args.signing_key))
        checkpoints = CheckpointSchedule(signer, args.checkpoint_events, args.checkpoint_seconds)
    registry = CollectorRegistry()
    leader = Leader(
        args.bootstrap,
        topics=Topics(args.prefix),
        leader_id=args.leader_id,
        group_id=args.group,
        instance_id=args.instance_id,
        security=security(args, "leader"),
        options=LeaderOptions(
            batch_size=args.batch_size,
            session_timeout_ms=args.session_timeout_ms,
            snapshot_dir=None if args.snapshot_dir is None else Path(args.snapshot_dir),
            snapshot_every=args.snapshot_every,
            warm_standby=args.warm_standby,
            checkpoints=checkpoints,
        ),
        metrics=LeaderMetrics(registry),
    )
    signal.signal(signal.SIGTERM, lambda *_: leader.stop())
    # What is loaded by now (modules, schemas, codecs) lives as long as the process:
    # keep it out of full collections, which pause the serving thread (≈ 30 ms here).
    gc.freeze()
    with serving_metrics(args, registry, lambda: readiness(leader), lambda: liveness(leader),
                         "metalog-leader"):
        try:
            leader.run()
        except KeyboardInterrupt:
            leader.stop()
    return 0


def session_timeout(text: str) -> int:
    """An argparse type: a session timeout in ms the broker accepts (6000 to 300000 by default)."""
    value = positive_int(text)
    if not 6_000 <= value <= 300_000:
        raise argparse.ArgumentTypeError(
            f"{value} ms is outside the broker's default range 6000..300000 "
            "(group.min/max.session.timeout.ms)"
        )
    return value


def add_parser(subparsers: Any) -> None:
    """Register ``leader``."""
    parser = subparsers.add_parser(
        "leader", help="lead the catalogs of the commands partitions this process owns"
    )
    add_cluster_options(parser)
    parser.add_argument("--group", help="the leaders' consumer group (default {prefix}-leaders)")
    parser.add_argument("--leader-id", help="name stamped on LeaderElected (default host-pid)")
    parser.add_argument("--instance-id",
                        help="static group membership: unique per process, the same across its "
                             "restarts, so a restart moves no catalog")  # fmt: skip
    parser.add_argument("--batch-size", type=positive_int, default=200,
                        help="commands per transaction (1 or more)")  # fmt: skip
    parser.add_argument("--signing-key", default=None,
                        help="sign checkpoints with this Ed25519 private key file (`metalog keys "
                             "generate`); without it no checkpoint is signed")  # fmt: skip
    parser.add_argument("--checkpoint-events", type=positive_int, default=1000,
                        help="sign after this many events (default 1000)")
    parser.add_argument("--checkpoint-seconds", type=positive_float, default=60.0,
                        help="sign when an event has waited this long unsigned (default 60)")
    parser.add_argument("--snapshot-dir",
                        help="start owned partitions from the snapshots here and write them "
                             "(shared storage when leaders run on several machines)")  # fmt: skip
    parser.add_argument("--snapshot-every", type=positive_int, default=100_000,
                        help="committed events of a partition between its snapshots")  # fmt: skip
    parser.add_argument("--warm-standby", action="store_true",
                        help="keep the catalogs of the partitions this process does not own in "
                             "memory (snapshots + tail): a takeover reads only the last tail")
    parser.add_argument("--session-timeout-ms", type=session_timeout, default=10_000,
                        help="a leader that stops heartbeating is replaced after this long "
                             "(6000 or more: the broker's minimum)")  # fmt: skip
    add_metrics_flags(parser)
    add_json_flag(parser, "its status lines as JSON lines on stdout (docs/cli.md)")
    parser.set_defaults(func=_leader)
