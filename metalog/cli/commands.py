"""The ``metalog`` command line.

Each command group is a module of `metalog.cli` whose ``add_parser(subparsers)``
registers its subcommands and sets ``func`` (a handler ``(argparse.Namespace) -> int``)
as parser default. To add a command, write such a module and list its ``add_parser``
in ``COMMANDS``: the table is plain imports, so a reader (or a type checker) sees
every command. A module imports what only its handlers need (Spark, the SQL
engine, the server) inside them: ``metalog --help`` and a bare install load none
of it.

Whatever goes wrong, the user sees one line on stderr and an exit code
(``EXIT_CODES``), never a traceback: `main` is the one place errors are
printed. ``METALOG_TRACEBACK=1`` shows the traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaException

from events.errors import MetalogError
from metalog.cli import audit, follow, keys, leader, project, replay, serve, sql, stack
from producers.errors import CommandOutcomeUnknown
from projector.audit.faults import AuditFailed
from projector.errors import (
    AccessDenied,
    BundleDamaged,
    ClusterUnavailable,
    CredentialsError,
    FollowerStopped,
)
from projector.kafka.errors import kafka_error

COMMANDS: tuple[Callable[[Any], None], ...] = (
    stack.add_parser,
    leader.add_parser,
    project.add_parser,
    follow.add_parser,
    sql.add_parser,
    replay.add_parser,
    audit.add_parser,
    keys.add_parser,
    serve.add_parser,
)
"""Each command group's ``add_parser``, in the order ``metalog --help`` lists them."""

EXIT_USAGE = 2
"""A usage error (argparse's own code)."""

EXIT_INTERNAL = 70
"""An unexpected error: a bug (sysexits EX_SOFTWARE)."""

EXIT_INTERRUPTED = 130
"""Ctrl-C."""

EXIT_CODES: tuple[tuple[type[MetalogError], int], ...] = (
    (CommandOutcomeUnknown, 75),  # EX_TEMPFAIL: retry with the same command id
    (ClusterUnavailable, 69),  # EX_UNAVAILABLE: the cluster or its topics cannot be reached
    (FollowerStopped, 69),  # the read side lost the cluster
    (AuditFailed, 65),  # EX_DATAERR: the log does not verify
    (BundleDamaged, 65),  # a bundle whose manifest, record file or note is missing or unreadable
    (AccessDenied, 77),  # EX_NOPERM: the cluster refused this principal
    (CredentialsError, 78),  # EX_CONFIG: no usable credentials file
    (MetalogError, 1),
)
"""The exit code of each metalog error, most specific first."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand.

    Raises:
        StackError: A ``METALOG_*`` variable the defaults come from is malformed.
    """
    parser = argparse.ArgumentParser(
        prog="metalog", description="An event-sourced metadata log on Kafka.")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add_parser in COMMANDS:
        add_parser(subparsers)
    return parser


def exit_code(error: MetalogError) -> int:
    """The exit code `main` returns for `error` (``EXIT_CODES``)."""
    return next(code for kind, code in EXIT_CODES if isinstance(error, kind))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command.

    Returns:
        The exit code: 0 on success, ``EXIT_CODES`` on a metalog error, 2 on a
        usage error, 70 on an unexpected error, 130 when interrupted.
    """
    args: argparse.Namespace | None = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return int(func(args))
    except MetalogError as exc:
        return _failed(exc)
    except KafkaException as exc:  # a Kafka error a command did not translate itself
        return _failed(kafka_error(exc, getattr(args, "bootstrap", None) or "the cluster"))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        if os.environ.get("METALOG_TRACEBACK"):
            raise
        print(f"metalog: internal error: {type(exc).__name__}: {exc} (a bug: please report "
              "it; METALOG_TRACEBACK=1 shows where)", file=sys.stderr)  # fmt: skip
        return EXIT_INTERNAL


def _failed(error: MetalogError) -> int:
    print(f"metalog: error: {error}", file=sys.stderr)
    return exit_code(error)


if __name__ == "__main__":
    sys.exit(main())
