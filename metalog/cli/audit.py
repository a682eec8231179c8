"""``metalog audit``: the group whose commands the audit modules add."""

from __future__ import annotations

import importlib
from typing import Any

AUDIT_MODULES: tuple[str, ...] = ("metalog.cli.history", "metalog.cli.verify")
"""Each module has ``add_commands(audit_subparsers)``."""


def add_parser(subparsers: Any) -> None:
    """Register ``audit`` and the commands of every module in ``AUDIT_MODULES``."""
    parser = subparsers.add_parser(
        "audit", help="history, diffs, verification and export of a catalog's log")
    audit_subparsers = parser.add_subparsers(title="audit commands", metavar="COMMAND")
    for name in AUDIT_MODULES:
        importlib.import_module(name).add_commands(audit_subparsers)
