"""``metalog audit``: the group whose commands the audit modules add."""

from __future__ import annotations

from typing import Any

from metalog.cli import history, verify

AUDIT_COMMANDS = (history.add_commands, verify.add_commands)
"""Each audit module's ``add_commands(audit_subparsers)``."""


def add_parser(subparsers: Any) -> None:
    """Register ``audit`` and the commands of every module in ``AUDIT_COMMANDS``."""
    parser = subparsers.add_parser(
        "audit", help="history, diffs, verification and export of a catalog's log")
    audit_subparsers = parser.add_subparsers(title="audit commands", metavar="COMMAND")
    for add_commands in AUDIT_COMMANDS:
        add_commands(audit_subparsers)
