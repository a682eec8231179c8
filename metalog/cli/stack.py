"""``metalog up``, ``metalog down`` and ``metalog status``: the local broker."""

from __future__ import annotations

import argparse
from typing import Any

from metalog.cli.args import positive_float, positive_int
from metalog.cli.output import add_json_flag, print_json
from metalog.cli.status import endpoint, look, render
from metalog.errors import StackError
from metalog.stack import broker as stack
from metalog.stack import cluster as stack_cluster
from metalog.stack import secure as stack_secure
from metalog.stack.config import StackConfig


def _up(args: argparse.Namespace) -> int:
    if args.brokers > 1:
        if args.secure:
            raise StackError("--secure runs one broker: use `metalog up --secure` or "
                             "`metalog up --brokers 3`, not both")
        return _up_cluster(StackConfig.from_env(partitions=args.partitions), args)
    config = StackConfig.from_env(partitions=args.partitions, secure=args.secure or None)
    info = stack.up(config)
    if config.secure:
        info["credentials"] = str(stack_secure.credentials_file(config))
    if args.json:
        print_json(info)
        return 0
    verb = "started" if info["started"] else "already running"
    print(f"metalog: broker {verb} (pid {info['pid']}, state {info['state_dir']})")
    print(f"bootstrap: {info['bootstrap']}")
    if config.secure:
        print(f"credentials: {info['credentials']} (owner only; pass it with --credentials or "
              "METALOG_CREDENTIALS)")
    return 0


def _up_cluster(config: StackConfig, args: argparse.Namespace) -> int:
    info = stack_cluster.up(config, args.brokers)
    if args.json:
        print_json(info)
        return 0
    started = ", ".join(str(n) for n in info["started"]) or "none (all running)"
    print(f"metalog: {args.brokers} brokers (started: {started}; state {info['state_dir']})")
    print(f"bootstrap: {info['bootstrap']}")
    return 0


def _down(args: argparse.Namespace) -> int:
    config = StackConfig.from_env()
    if stack_cluster.is_cluster(config):
        stopped = stack_cluster.down(config, stack_cluster.size(config))
    else:
        stopped = stack.down(config)
    if args.json:
        print_json({"stopped": stopped})
        return 0
    print("metalog: broker stopped" if stopped else "metalog: broker was not running")
    return 0


def _status(args: argparse.Namespace) -> int:
    config = StackConfig.from_env()
    if stack_cluster.is_cluster(config):
        info: dict[str, Any] = stack_cluster.status(config, stack_cluster.size(config))
        pids = ", ".join("stopped" if p is None else f"pid {p}" for p in info["pids"])
        lines = [f"brokers: {pids}"]
    else:
        info = stack.status()
        state = "running" if info["running"] else "stopped"
        lines = [f"broker: {state}" + (f" (pid {info['pid']})" if info["pid"] else "")]
    lines += [f"bootstrap: {info['bootstrap']}", f"state_dir: {info['state_dir']}"]
    if args.metrics:
        seen = [look(url, args.metrics_timeout) for url in dict.fromkeys(args.metrics)]
        info["processes"] = [one.document() for one in seen]
        lines += render(seen)
    if args.json:
        print_json(info)
    else:
        print("\n".join(lines))
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``up``, ``down`` and ``status``."""
    up = subparsers.add_parser("up", help="start the local Kafka broker and create the topics")
    up.add_argument("--partitions", type=positive_int, default=None,
                    help="partitions of newly created topics (default: METALOG_PARTITIONS or 3)")
    up.add_argument("--secure", action="store_true",
                    help="SASL_SSL with SCRAM principals and ACLs (docs/security.md); the "
                         "passwords go to an owner-only credentials file, never the terminal")
    up.add_argument("--brokers", type=int, choices=(1, 3), default=1,
                    help="3: a three-node KRaft cluster on loopback, replication factor 3, "
                         "min.insync.replicas 2 (ports METALOG_PORT..+5)")  # fmt: skip
    add_json_flag(up)
    up.set_defaults(func=_up)
    down = subparsers.add_parser("down", help="stop the local Kafka broker (keeps the data)")
    add_json_flag(down)
    down.set_defaults(func=_down)
    st = subparsers.add_parser("status", help="show whether the local broker is running and, "
                                              "with --metrics, how running processes do")
    st.add_argument("--metrics", nargs="+", action="extend", type=endpoint, default=[],
                    metavar="ENDPOINT",
                    help="the --metrics-port of running leaders, followers and projections "
                         "(PORT, HOST:PORT or http://HOST:PORT): their partitions, lag, "
                         "freshness and commit p99 from their /metrics")  # fmt: skip
    st.add_argument("--metrics-timeout", type=positive_float, default=2.0,
                    help="seconds to wait for each endpoint (default 2)")
    add_json_flag(st)
    st.set_defaults(func=_status)
