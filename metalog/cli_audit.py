"""``metalog audit``: the group of audit commands; each module in ``AUDIT_MODULES`` adds its own."""

from __future__ import annotations

import importlib
from typing import Any

AUDIT_MODULES: tuple[str, ...] = ("metalog.cli_history",)


def add_parser(subparsers: Any) -> None:
    """Register ``audit`` and, through ``add_commands(audit_subparsers)``, its subcommands."""
    audit = subparsers.add_parser("audit", help="history, diffs and verification of a catalog")
    audit_subparsers = audit.add_subparsers(title="audit commands", metavar="COMMAND")
    for name in AUDIT_MODULES:
        importlib.import_module(name).add_commands(audit_subparsers)
