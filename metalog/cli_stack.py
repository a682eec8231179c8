"""``metalog up``, ``metalog down`` and ``metalog status``: the local broker."""

from __future__ import annotations

import argparse
from typing import Any

from metalog import stack, stack_secure
from metalog.cli_args import positive_int
from metalog.cli_json import add_json_flag, print_json
from metalog.stack_config import StackConfig


def _up(args: argparse.Namespace) -> int:
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


def _down(args: argparse.Namespace) -> int:
    stopped = stack.down()
    if args.json:
        print_json({"stopped": stopped})
        return 0
    print("metalog: broker stopped" if stopped else "metalog: broker was not running")
    return 0


def _status(args: argparse.Namespace) -> int:
    info: dict[str, Any] = stack.status()
    if args.json:
        print_json(info)
    else:
        state = "running" if info["running"] else "stopped"
        print(f"broker: {state}" + (f" (pid {info['pid']})" if info["pid"] else ""))
        print(f"bootstrap: {info['bootstrap']}")
        print(f"state_dir: {info['state_dir']}")
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``up``, ``down`` and ``status``."""
    up = subparsers.add_parser("up", help="start the local Kafka broker and create the topics")
    up.add_argument("--partitions", type=positive_int, default=None,
                    help="partitions of newly created topics (default: METALOG_PARTITIONS or 3)")
    up.add_argument("--secure", action="store_true",
                    help="SASL_SSL with SCRAM principals and ACLs (docs/security.md); the "
                         "passwords go to an owner-only credentials file, never the terminal")
    add_json_flag(up)
    up.set_defaults(func=_up)
    down = subparsers.add_parser("down", help="stop the local Kafka broker (keeps the data)")
    add_json_flag(down)
    down.set_defaults(func=_down)
    st = subparsers.add_parser("status", help="show whether the local broker is running")
    add_json_flag(st)
    st.set_defaults(func=_status)
