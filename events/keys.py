"""The metadata key layout (GreptimeDB's), as builders and one parser.

Keys are the identity of state: every mutation names one, every consumer
(the Python fold, Spark) keys its state by them.
"""

from dataclasses import dataclass
from typing import Literal

TABLE_INFO = "__table_info"
TABLE_NAME = "__table_name"
TABLE_ROUTE = "__table_route"
DATANODE_TABLE = "__dn_table"
LABEL_RULE = "__label_rule"
REMOVED = "__removed-"

KeyKind = Literal["table_info", "table_name", "table_route", "datanode_table", "label_rule"]


def table_info_key(table_id: int) -> str:
    """`__table_info/{table_id}`."""
    return f"{TABLE_INFO}/{table_id}"


def table_name_key(catalog: str, schema_name: str, table_name: str) -> str:
    """`__table_name/{catalog}/{schema}/{table}`."""
    return f"{TABLE_NAME}/{catalog}/{schema_name}/{table_name}"


def table_route_key(table_id: int) -> str:
    """`__table_route/{table_id}`."""
    return f"{TABLE_ROUTE}/{table_id}"


def datanode_table_key(datanode_id: int, table_id: int) -> str:
    """`__dn_table/{datanode_id}/{table_id}`."""
    return f"{DATANODE_TABLE}/{datanode_id}/{table_id}"


def label_rule_key(rule_id: str) -> str:
    """`__label_rule/{rule_id}`; rule ids look like `schema/{db}/{table}[/{partition}]`."""
    return f"{LABEL_RULE}/{rule_id}"


def removed(key: str) -> str:
    """The key a dropped table's info or route moves to."""
    return f"{REMOVED}{key}"


@dataclass(frozen=True, slots=True)
class ParsedKey:
    """A key split into its kind and parts."""

    kind: KeyKind
    removed: bool
    parts: tuple[str, ...]


_KINDS: dict[str, tuple[KeyKind, int]] = {
    TABLE_INFO: ("table_info", 1),
    TABLE_NAME: ("table_name", 3),
    TABLE_ROUTE: ("table_route", 1),
    DATANODE_TABLE: ("datanode_table", 2),
}


def parse_key(key: str) -> ParsedKey:
    """Split a key into kind and parts; `ValueError` names a key outside the layout."""
    is_removed = key.startswith(REMOVED)
    body = key[len(REMOVED) :] if is_removed else key
    prefix, _, rest = body.partition("/")
    if prefix == LABEL_RULE and rest and not is_removed:
        return ParsedKey("label_rule", False, (rest,))
    kind = _KINDS.get(prefix)
    parts = tuple(rest.split("/")) if rest else ()
    if kind is None or len(parts) != kind[1] or not all(parts):
        raise ValueError(f"key {key!r} is not in the metadata key layout")
    if is_removed and kind[0] not in ("table_info", "table_route"):
        raise ValueError(f"key {key!r}: only table info and routes move under {REMOVED}")
    return ParsedKey(kind[0], is_removed, parts)
