"""Why a SQL statement is refused before anything is sent, and sqlglot's errors told our way.

sqlglot's errors are for people who know sqlglot: a tokenizer error quotes up to
100 characters around the failure with no position, and a parse error's
description can name the parser's classes and tokens (`Required keyword: 'this'
missing for <class 'sqlglot.expressions…'>`). `syntax_error` and `unreadable`
turn both into a `SqlSyntaxError` with the line and column of the offending
token and a description in SQL's words; nothing of the parser reaches a user.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from events.errors import MetalogError

NEAR = 24
"""A message quotes at most this many characters of the offending text."""

_PARSER_CLASSES = frozenset(
    name
    for name, value in vars(exp).items()
    if isinstance(value, type) and issubclass(value, exp.Expr)
)
"""The names of sqlglot's expression classes: a description naming one is the parser's."""

_PARSER_INTERNALS = re.compile(r"<class |<Token |sqlglot|TokenType\.")
_WORD = re.compile(r"\b[A-Z][A-Za-z]*[a-z][A-Za-z]*\b")
"""A capitalised word with a lowercase letter: how a class name looks (`Where`, `MergeTreeTTL`)."""


class SqlError(MetalogError):
    """A statement cannot be served; nothing was sent for it or any statement after it."""


class SqlSyntaxError(SqlError):
    """A statement does not parse; `line` and `column` (1-based) point at the problem.

    Attributes:
        line: The line where the offending token starts.
        column: The column where it starts.
    """

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class UnsupportedStatement(SqlError):
    """A statement parses but is not one metalog serves (docs/sql.md lists them)."""


def syntax_error(
    text: str, tokens: Sequence[Token], error: ParseError, forms: Mapping[str, str]
) -> SqlSyntaxError:
    """A sqlglot parse error as ours: position of the token it names, no parser words.

    Args:
        text: The whole script.
        tokens: Its tokens.
        error: What sqlglot's parser raised.
        forms: The statement forms shown as the fix, by a statement's first word.

    Returns:
        The error to raise.
    """
    first = error.errors[0] if error.errors else {}
    line, column = int(first.get("line") or 1), int(first.get("col") or 1)
    near = str(first.get("highlight") or "")
    if near and "\n" not in near and len(near) <= column:
        column -= len(near) - 1  # sqlglot gives the token's last column; say where it starts
    why = _description(first.get("description"), near)
    return _located(text, tokens, line, column, near.strip(), why, forms)


def unreadable(text: str, tokens: Sequence[Token], forms: Mapping[str, str]) -> SqlSyntaxError:
    """A text sqlglot's tokenizer gave up on, told at the token it could not read.

    The tokenizer stops at a string, quoted name or comment that is never
    closed, or at a malformed literal; the tokens it read before are kept, so
    the failing one starts at the first character after them that is not
    blank or a (closed) comment.

    Args:
        text: The whole script.
        tokens: The tokens read before the failure (`Tokenizer.tokens`).
        forms: The statement forms shown as the fix, by a statement's first word.

    Returns:
        The error to raise.
    """
    at = _skip_blanks(text, tokens[-1].end + 1 if tokens else 0)
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    rest = text[at:]
    near = rest.split("\n", 1)[0]
    opener = next((q for q in ("'", '"', "`", "/*") if rest.startswith(q)), None)
    if opener == "`":
        why = "the quoted name that starts here is never closed: end it with `"
    elif opener == "/*":
        why = "the comment that starts here is never closed: end it with */"
    elif opener is not None:
        why = f"the string that starts here is never closed: end it with {opener}"
    else:
        why = f"`{_clip(near)}` is not a valid literal or token"
    return _located(text, tokens, line, column, near, why, forms)


def _located(
    text: str, tokens: Sequence[Token], line: int, column: int, near: str, why: str,
    forms: Mapping[str, str],
) -> SqlSyntaxError:  # fmt: skip
    form = forms.get(_verb(tokens, _offset(text, line, column)))
    return SqlSyntaxError(
        f"syntax error at line {line}, column {column}"
        + (f" near `{_clip(near)}`" if near else "")
        + f": {why}"
        + (f"; the form is {form}" if form else "; docs/sql.md lists the statements"),
        line,
        column,
    )


def _offset(text: str, line: int, column: int) -> int:
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
    return start + column - 1


def _verb(tokens: Sequence[Token], offset: int) -> str:
    """The first word of the statement the offset is in (upper case; "" if none)."""
    verb, starts = "", True
    for token in tokens:
        if token.start > offset:
            break
        if token.token_type == TokenType.SEMICOLON:
            starts = True
        elif starts:
            verb, starts = token.text.upper(), False
    return verb


def _description(description: object, near: str) -> str:
    """sqlglot's description when it is in SQL's words, else ours about the same token."""
    text = str(description or "")
    leaks = _PARSER_INTERNALS.search(text) or _PARSER_CLASSES.intersection(_WORD.findall(text))
    if text and not leaks:
        return text
    if "SENTINEL" in text:  # sqlglot's token past the last one
        return "the statement ends before it is complete"
    if near.strip():
        return f"`{_clip(near.strip())}` is not valid here, or what comes before it is incomplete"
    return "the statement is incomplete"


def _skip_blanks(text: str, at: int) -> int:
    """The first offset from `at` that is neither whitespace nor a closed comment."""
    while at < len(text):
        if text[at].isspace():
            at += 1
        elif text.startswith("/*", at) and text.find("*/", at + 2) >= 0:
            at = text.find("*/", at + 2) + 2
        elif text.startswith(("--", "#"), at) and text.find("\n", at) >= 0:
            at = text.find("\n", at) + 1
        else:
            break
    return at


def _clip(text: str) -> str:
    return text if len(text) <= NEAR else text[: NEAR - 1] + "…"
