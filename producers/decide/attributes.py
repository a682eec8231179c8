"""TiDB's attribute string: `ALTER TABLE t [PARTITION p] ATTRIBUTES='k=v[, k1=v1…]'`.

The proposal (seeds/tidb-region-label-sql.md) says an attribute "can be any
string that doesn't contain the reserved words" without listing them. metalog
reserves exactly the tokens that would change what the string or the rule
means:

- the characters `,` `=` (the item and key/value separators) and `"` `'`
  (the quotes of the SQL literal and of the REGION_LABEL display);
- `DEFAULT`, case-insensitive, as a whole key or value: `ATTRIBUTES=DEFAULT`
  is the reset, so a label spelled `default` would read as one;
- the keys `db`, `table` and `partition`, case-insensitive: TiDB's
  `Rule.Reset` stamps them with the rule's own names, so a user value would
  be silently overwritten.

SQL reserved words (`SELECT`, `TABLE`…) are not reserved: the attributes sit
inside a quoted literal, so the SQL parser never sees them as tokens.
"""

from events.labels import format_attributes
from events.values import Label
from producers.errors import InvalidAttributes

__all__ = ["format_attributes", "parse_attributes"]

RESERVED_CHARACTERS = frozenset(",=\"'")
"""Characters no key or value may contain."""

RESET_KEYWORD = "default"
"""`ATTRIBUTES=DEFAULT` resets a rule; no key or value may be this word."""

RESERVED_KEYS = frozenset({"db", "table", "partition"})
"""Keys TiDB fills in itself from the rule's schema, table and partition names."""

_FORMAT_HINT = "write `key=value[, key1=value1…]`"


def parse_attributes(text: str) -> tuple[Label, ...]:
    """Parse a TiDB attribute string into labels, in the order given.

    Items are separated by `,`; whitespace around items, keys and values is
    trimmed. Keys keep their case but duplicates are found case-insensitively.

    Args:
        text: The content of the quoted literal, e.g. `"merge_option=allow, a=b"`.

    Returns:
        One `Label` per item, in the order written.

    Raises:
        InvalidAttributes: The string is empty, an item is empty or has no
            single `=`, a key or value is empty, a key repeats, or a key or
            value uses a reserved word (see the module docstring).
    """
    if not text.strip():
        raise InvalidAttributes(
            "attributes are empty: "
            f"{_FORMAT_HINT}, or use ATTRIBUTES=DEFAULT (unquoted) to reset them"
        )
    if text.strip().lower() == RESET_KEYWORD:
        raise InvalidAttributes(
            f"attributes {text!r} are the reset keyword inside quotes: "
            "write ATTRIBUTES=DEFAULT without quotes to reset them"
        )
    labels: list[Label] = []
    seen: dict[str, str] = {}
    for position, item in enumerate(text.split(","), start=1):
        label = _parse_item(item.strip(), position)
        folded = label.key.lower()
        if folded in seen:
            raise InvalidAttributes(
                f"attribute key `{label.key}` is given twice (already as `{seen[folded]}`): "
                "keep one `key=value` per key"
            )
        seen[folded] = label.key
        labels.append(label)
    return tuple(labels)


def _parse_item(item: str, position: int) -> Label:
    """Parse one trimmed `key=value` item; `position` counts from 1 for messages."""
    if not item:
        raise InvalidAttributes(
            f"attribute item {position} is empty (a stray `,`?): remove it and {_FORMAT_HINT}"
        )
    if "=" not in item:
        raise InvalidAttributes(f"attribute item {position} `{item}` has no `=`: {_FORMAT_HINT}")
    key, _, value = (part.strip() for part in item.partition("="))
    if "=" in value:
        raise InvalidAttributes(
            f"attribute item {position} `{item}` has more than one `=`: "
            "`=` is reserved; write exactly one `key=value` per item"
        )
    if not key:
        raise InvalidAttributes(
            f"attribute item {position} `{item}` has an empty key: write `key={value}`"
        )
    if not value:
        raise InvalidAttributes(
            f"attribute item {position} `{item}` has an empty value: write `{key}=value`"
        )
    for role, word in (("key", key), ("value", value)):
        _check_reserved(role, word, item, position)
    if key.lower() in RESERVED_KEYS:
        raise InvalidAttributes(
            f"attribute key `{key}` is reserved: TiDB sets db, table and partition "
            "from the rule's own names; choose another key"
        )
    return Label(key=key, value=value)


def _check_reserved(role: str, word: str, item: str, position: int) -> None:
    """Reject a key or value that is or contains a reserved word."""
    used = sorted(RESERVED_CHARACTERS.intersection(word))
    if used:
        shown = " ".join(f"`{char}`" for char in used)
        raise InvalidAttributes(
            f"attribute item {position} `{item}`: the {role} `{word}` contains reserved "
            f"{shown}: remove it (`,` `=` `\"` `'` may not appear in keys or values)"
        )
    if word.lower() == RESET_KEYWORD:
        raise InvalidAttributes(
            f"attribute item {position} `{item}`: the {role} `{word}` is the reserved "
            "reset keyword DEFAULT: choose another word, or use ATTRIBUTES=DEFAULT to reset"
        )
