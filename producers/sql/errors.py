"""Why a SQL statement is refused before anything is sent."""

from __future__ import annotations

from events.errors import MetalogError


class SqlError(MetalogError):
    """A statement cannot be served; nothing was sent for it or any statement after it."""


class SqlSyntaxError(SqlError):
    """A statement does not parse; `line` and `column` (1-based) point at the problem.

    Attributes:
        line: The line of the offending token.
        column: Its column.
    """

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class UnsupportedStatement(SqlError):
    """A statement parses but is not one metalog serves (docs/sql.md lists them)."""
