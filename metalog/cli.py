"""The ``metalog`` command line.

Each feature module contributes its subcommands through a function
``add_parser(subparsers)`` that registers them and sets ``func`` (a handler
``(argparse.Namespace) -> int``) as parser default. To add a command, write
such a module and list it in ``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from events.errors import MetalogError

COMMAND_MODULES: tuple[str, ...] = ("metalog.cli_stack", "metalog.cli_leader",
                                   "metalog.cli_project", "metalog.cli_follow")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="metalog", description="An event-sourced metadata log on Kafka.")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command.

    Returns:
        The exit code: 0 on success, 1 on a metalog error, 2 on a usage error,
        130 when interrupted.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args))
    except MetalogError as exc:
        print(f"metalog: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
