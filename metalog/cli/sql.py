"""``metalog sql``: TiDB's DDL and queries from a shell, a file, or an interactive prompt."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from events.errors import MetalogError
from events.topics import Topics
from metalog.cli.args import add_cluster_options, positive_float, positive_int, security

if TYPE_CHECKING:
    # Imported where a statement runs (`_sql`): sqlglot and DuckDB are the `[sql]` extra,
    # cost every other command their import time, and DuckDB's bindings print leak
    # warnings at exit.
    from producers.sql.session import Applied, SqlSession

HISTORY = Path.home() / ".metalog_sql_history"
PROMPT, MORE = "metalog> ", "     ... "


def as_json(applied: list[Applied]) -> list[dict[str, Any]]:
    """The documented `--json` shape of each statement that ran (docs/sql.md)."""
    return [item.document() for item in applied]


def _print(console: Console, applied: list[Applied]) -> None:
    for item in applied:
        if item.wrote:
            for c in item.committed:
                console.print(f"OK {item.statement.sql}: resource_version {c.resource_version}",
                              markup=False, highlight=False)  # fmt: skip
            for why in item.skipped:
                console.print(f"skipped {item.statement.sql}: {why}", markup=False)
        elif item.result is not None:
            table = Table()
            for column in item.result.columns:
                # Folded, never cut: a rule id or a range is useless with an ellipsis.
                table.add_column(column, overflow="fold")
            for row in item.result.rows:
                # Text, not markup: `/*T![attributes] …*/` is a value, not a style tag.
                table.add_row(*(Text("NULL" if v is None else str(v)) for v in row))
            console.print(table)
            console.print(f"{len(item.result.rows)} row(s)")


def _run(session: SqlSession, text: str, args: argparse.Namespace, console: Console) -> None:
    try:
        applied = session.run(text)
    except MetalogError as exc:
        done: list[Applied] = getattr(exc, "applied", [])  # a `StatementRejected`'s
        if args.json:
            print(json.dumps({"statements": as_json(done), "error": _error(exc)}))
        else:
            _print(console, done)
        raise
    if args.json:
        print(json.dumps({"statements": as_json(applied)}, default=str))
    else:
        _print(console, applied)


def _error(exc: Exception) -> dict[str, Any]:
    cause = getattr(exc, "cause", None)
    return {"type": type(cause or exc).__name__, "message": str(exc),
            "current_version": getattr(cause, "current_version", None),
            "current_resource_version": getattr(cause, "current_resource_version", None)}


def _shell(session: SqlSession, args: argparse.Namespace, console: Console) -> int:
    import readline

    if HISTORY.exists():
        readline.read_history_file(HISTORY)
    lines: list[str] = []
    try:
        while True:
            try:
                line = input(MORE if lines else PROMPT)
            except EOFError:
                break
            if not lines and line.strip() in ("\\q", "quit", "exit"):
                break
            lines.append(line)
            text = "\n".join(lines)
            if not session.complete(text):
                continue
            lines = []
            try:
                _run(session, text, args, console)
            except MetalogError as exc:  # the shell goes on after a bad statement
                console.print(f"error: {exc}", markup=False, highlight=False)
    finally:
        readline.write_history_file(HISTORY)
    return 0


def _sql(args: argparse.Namespace) -> int:
    # One line says why the cluster cannot be reached; librdkafka's chatter would repeat it.
    logging.getLogger("projector.follower.follower").setLevel(logging.CRITICAL)
    logging.getLogger("metalog.kafka").setLevel(logging.CRITICAL)
    # The SQL home needs the `[sql]` extra (sqlglot, DuckDB): loaded by this command only.
    from producers.sql.session import SqlSession
    from producers.sql.translate import Settings

    console = Console()
    settings = Settings(
        catalog=args.catalog, actor=args.actor, schema=args.database,
        expected_version=args.expected_version,
        expected_resource_version=args.expected_resource_version,
    )  # fmt: skip
    session = SqlSession(args.bootstrap, settings, Topics(args.prefix), args.timeout,
                         delta_dir=args.delta_dir, write_security=security(args, "client"),
                         read_security=security(args, "follower"))
    try:
        if args.file:
            text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        elif args.statements:
            text = args.statements
        else:
            return _shell(session, args, console)
        _run(session, text, args, console)
        return 0
    finally:
        session.close()


def add_parser(subparsers: Any) -> None:
    """Register ``sql``."""
    parser = subparsers.add_parser(
        "sql", help="run TiDB DDL and queries (a statement, -f FILE, or an interactive shell)"
    )
    parser.add_argument("statements", nargs="?", help="statements separated by `;`")
    parser.add_argument("-f", "--file", help="a file of statements (- for stdin)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    add_cluster_options(parser)
    parser.add_argument("--catalog", default="greptime", help="the catalog (default greptime)")
    parser.add_argument("--database", default="public",
                        help="the database of unqualified names (default public)")  # fmt: skip
    parser.add_argument("--actor", default="sql", help="stamped on the events (default sql)")
    parser.add_argument("--expected-version", type=positive_int,
                        help="the first writing statement applies only at this table version")
    parser.add_argument("--expected-resource-version", type=int,
                        help="… only while the catalog is at this resource_version")
    parser.add_argument("--timeout", type=positive_float, default=30.0,
                        help="seconds to wait for a reply or for the follower")  # fmt: skip
    parser.add_argument("--delta-dir", metavar="DIR",
                        help="answer queries from the Spark projection's Delta tables under "
                             "DIR (`metalog project --delta-dir`) instead of a follower")
    parser.set_defaults(func=_sql)
