"""The optimistic-concurrency hint of a writing statement: `/*+ EXPECTED_VERSION(n) */`.

Written where MySQL and TiDB put optimizer hints, right after the statement's verb
(`ALTER /*+ EXPECTED_VERSION(3) */ TABLE t …`); anywhere else in the statement works
too. sqlglot keeps such a comment on a node of the statement's tree (without the
`+`); its text is read by sqlglot's hint parser. A comment that holds no such call
is an ordinary comment and is ignored, as TiDB ignores hints it does not know. The
hint conditions the statement's first command, in place of `--expected-version` /
`--expected-resource-version`.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from producers.sql.errors import SqlError

HINTS = {"EXPECTED_VERSION": "expected_version",
         "EXPECTED_RESOURCE_VERSION": "expected_resource_version"}  # fmt: skip
"""Each hint and the command field it sets."""


def expectations(tree: exp.Expr) -> dict[str, int]:
    """The command fields the statement's hints set, such as ``{"expected_version": 3}``.

    Raises:
        SqlError: A hint is given twice or its argument is not one whole number.
    """
    found: dict[str, int] = {}
    # Wherever in the statement the comment is: a misplaced hint must not be lost.
    comments = [text for node in tree.walk() for text in node.comments or ()]
    for comment in comments:
        for call in _calls(comment):
            name = call.name.upper()
            field = HINTS.get(name)
            if field is None:
                continue
            arguments = call.expressions
            if (len(arguments) != 1 or not isinstance(arguments[0], exp.Literal)
                    or not arguments[0].is_int or int(arguments[0].name) < 0):  # fmt: skip
                raise SqlError(f"the hint {call.sql()} takes one whole number: "
                               f"/*+ {name}(3) */")  # fmt: skip
            if field in found:
                raise SqlError(f"the hint {name} is given twice: give it once")
            found[field] = int(arguments[0].name)
    return found


def _calls(comment: str) -> list[exp.Anonymous]:
    """The calls a comment holds, read by sqlglot's own hint parser (MySQL's
    `/*+ A(1) B(2) */` of a SELECT); none when the comment is prose."""
    try:
        select = sqlglot.parse_one(f"SELECT /*+ {comment} */ 1", read="mysql")
    except (ParseError, TokenError):
        return []
    hint = select.args.get("hint")
    items = hint.expressions if isinstance(hint, exp.Hint) else []
    return [item for item in items if isinstance(item, exp.Anonymous)]
