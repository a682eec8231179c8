"""The metadata key layout (GreptimeDB's), as key builders.

Keys are the identity of state: every mutation names one, every consumer
(the Python fold, Spark) keys its state by them.
"""

TABLE_INFO = "__table_info"
TABLE_NAME = "__table_name"
TABLE_ROUTE = "__table_route"
DATANODE_TABLE = "__dn_table"
LABEL_RULE = "__label_rule"
REMOVED = "__removed-"


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


def datanode_table_ids(key: str) -> tuple[int, int]:
    """(datanode id, table id) of a `__dn_table/{datanode_id}/{table_id}` key."""
    datanode, table = key[len(DATANODE_TABLE) + 1 :].split("/")
    return int(datanode), int(table)


def label_rule_key(rule_id: str) -> str:
    """`__label_rule/{rule_id}`; rule ids look like `schema/{db}/{table}[/{partition}]`."""
    return f"{LABEL_RULE}/{rule_id}"


def removed(key: str) -> str:
    """The key a dropped table's info or route moves to."""
    return f"{REMOVED}{key}"
