"""TiDB region labels: rule ids, key ranges, inheritance, and `INFORMATION_SCHEMA.REGION_LABEL`.

A label rule (seeds/tidb-region-label-sql.md) ties `key=value` labels to the
TiKV key ranges of a table or a partition. A range covers one physical id:
from the record prefix of `id` to that of `id + 1`, both memcomparable-encoded
and printed as lowercase hex, exactly as TiDB sends them to PD.

Reading the seed's example back through this encoding gives its ids: every
key there is `t` + `80 00 00 00 00 00 00 XX` + `_r` (sign-flipped int64, so
`XX` is the id), so table `test.t1` is id 57 (0x39), partition `p0` is 58
(0x3a) and a second partition (say `p1`) is 59 (0x3b); the table rule lists
57, 58, 59 and `p0`'s rule lists 58 alone.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from events.values import KeyRange, Label, LabelRuleValue, TableInfoValue

RULE_ID_PREFIX = "schema"
"""TiDB's `label.IDPrefix`."""

KEY_RANGE = "key-range"
"""The only rule type TiDB writes."""

HIDDEN_LABEL_KEYS = frozenset({"db", "table", "partition"})
"""Keys TiDB stamps on every rule and leaves out of REGION_LABEL."""

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_SIGN_BIT = 1 << 63
_GROUP = 8
_MARKER = 0xFF


def encode_record_prefix(physical_id: int) -> bytes:
    """TiDB's record key prefix of a table or partition: `t{id}_r`.

    The id is a big-endian int64 with its sign bit flipped, so the byte order
    of prefixes is the numeric order of ids (negative ids included).

    Args:
        physical_id: A table or partition id, a signed 64-bit integer.

    Returns:
        The 11 bytes `t` + 8 id bytes + `_r`.

    Raises:
        ValueError: The id does not fit a signed 64-bit integer.
    """
    if not _INT64_MIN <= physical_id <= _INT64_MAX:
        raise ValueError(f"physical id {physical_id} is not a signed 64-bit integer")
    flipped = (physical_id & 0xFFFF_FFFF_FFFF_FFFF) ^ _SIGN_BIT
    return b"t" + flipped.to_bytes(8, "big") + b"_r"


def memcomparable(data: bytes) -> bytes:
    """TiDB/TiKV `codec.EncodeBytes`: an order-preserving, self-delimiting encoding.

    The input is cut into groups of 8 bytes; each group is padded with `0x00`
    to 8 bytes and followed by the marker `0xFF - padding`. A last group is
    always written, so an input whose length is a multiple of 8 (empty too)
    ends with 8 zero bytes and the marker `0xF7`.

    Args:
        data: The raw key.

    Returns:
        `9 * (len(data) // 8 + 1)` bytes.
    """
    out = bytearray()
    for start in range(0, len(data) + 1, _GROUP):
        group = data[start : start + _GROUP]
        padding = _GROUP - len(group)
        out += group + bytes(padding)
        out.append(_MARKER - padding)
    return bytes(out)


def record_key_range(physical_id: int) -> KeyRange:
    """The key range of one physical id's records, as TiDB prints it.

    Args:
        physical_id: A table or partition id; `id + 1` must still fit in int64.

    Returns:
        `[hex(memcomparable(t{id}_r)), hex(memcomparable(t{id+1}_r)))`, lowercase.

    Raises:
        ValueError: The id or its successor is not a signed 64-bit integer.
    """
    start = memcomparable(encode_record_prefix(physical_id))
    end = memcomparable(encode_record_prefix(physical_id + 1))
    return KeyRange(start_key=start.hex(), end_key=end.hex())


def rule_id(schema_name: str, table_name: str, partition_name: str | None = None) -> str:
    """The label rule id: `schema/{db}/{table}` or `schema/{db}/{table}/{partition}`.

    Args:
        schema_name: The database name.
        table_name: The table name.
        partition_name: The partition name, for a partition's rule.

    Returns:
        The rule id.
    """
    parts = [RULE_ID_PREFIX, schema_name, table_name]
    if partition_name is not None:
        parts.append(partition_name)
    return "/".join(parts)


def table_rule_ranges(table: TableInfoValue) -> tuple[KeyRange, ...]:
    """The ranges of a table's rule: the table's own id and every partition id.

    Ids are listed in ascending order, as TiDB's `Rule.Reset` sorts them: the
    table id first (partitions are allocated after their table), then the
    partitions. After a TRUNCATE PARTITION the new partition id is the
    largest, so id order can differ from the partitions' declared order;
    ascending ids keep the ranges in key order either way.

    Args:
        table: The table's definition.

    Returns:
        One range per physical id, in ascending id order.
    """
    ids = sorted({table.table_id, *(p.partition_id for p in table.partitions)})
    return tuple(record_key_range(physical_id) for physical_id in ids)


def partition_rule_ranges(partition_id: int) -> tuple[KeyRange, ...]:
    """The ranges of a partition's rule: its own id only.

    Args:
        partition_id: The partition's physical id.

    Returns:
        A one-range tuple.
    """
    return (record_key_range(partition_id),)


def label_rule(
    rule_id: str, labels: tuple[Label, ...], ranges: tuple[KeyRange, ...]
) -> LabelRuleValue:
    """Build a `key-range` label rule.

    Args:
        rule_id: From `rule_id()`.
        labels: The labels, in the order given.
        ranges: From `table_rule_ranges()` or `partition_rule_ranges()`.

    Returns:
        The rule value stored under `__label_rule/{rule_id}`.
    """
    return LabelRuleValue(rule_id=rule_id, rule_type=KEY_RANGE, labels=labels, ranges=ranges)


def owned_rule(rule: LabelRuleValue | None, physical_id: int) -> LabelRuleValue | None:
    """The rule if it belongs to `physical_id`, else None.

    Rule ids hold names but ranges hold ids, and a dropped table keeps its
    rule, with its own id's ranges, until it is purged or recovered (the
    seed's lifecycle). So the rule found under a table's name is that table's
    only when its ranges cover the table's (or the partition's) record range:
    a new table under a dropped table's name, or a table renamed onto it,
    starts with no attributes, and the dropped table's stay for its RECOVER.

    Args:
        rule: The rule found under the table's or partition's rule id, if any.
        physical_id: The id of the live table or partition looked up.

    Returns:
        `rule`, or None when there is none or it covers other ids.
    """
    if rule is None or record_key_range(physical_id) not in rule.ranges:
        return None
    return rule


def rules_of(
    table: TableInfoValue, lookup: Callable[[str], LabelRuleValue | None]
) -> tuple[LabelRuleValue | None, dict[str, LabelRuleValue | None]]:
    """A table's own rule and each partition's, as `owned_rule` keeps them.

    Every read that shows a table's attributes (SHOW ATTRIBUTES, SHOW CREATE
    TABLE, `View.attributes`) takes them from here, so each agrees with
    REGION_LABEL, whose ranges say which ids a rule covers.

    Args:
        table: The live table.
        lookup: The rule of a rule id, if any (a view's or another source's).

    Returns:
        The table's rule, and each partition's by partition name (None: none of its own).
    """
    schema, name = table.schema_name, table.table_name
    own = owned_rule(lookup(rule_id(schema, name)), table.table_id)
    partitions = {
        p.name: owned_rule(lookup(rule_id(schema, name, p.name)), p.partition_id)
        for p in table.partitions
    }
    return own, partitions


def effective_labels(
    table_rule: LabelRuleValue | None, partition_rule: LabelRuleValue | None
) -> tuple[Label, ...]:
    """The labels that apply to a partition: its own, then those it inherits.

    Granularity is per key: a partition's label overrides the table's label
    with the same key, and the table's other labels are inherited. So table
    `merge_option=deny, a=1` and partition `merge_option=allow` give
    `merge_option=allow, a=1`. Order: the partition's labels in their order,
    then the inherited table labels in theirs.

    The seed's other rule, that setting a table's attributes later overrides
    its partitions', is about when rules are written, not how they combine:
    the command that sets the table's rule must rewrite or drop the partition
    rules; this function only sees the rules as they stand.

    Args:
        table_rule: The table's rule, if it has one.
        partition_rule: The partition's rule, if it has one.

    Returns:
        The effective labels; empty when neither rule exists.
    """
    own = partition_rule.labels if partition_rule is not None else ()
    inherited = table_rule.labels if table_rule is not None else ()
    own_keys = {label.key for label in own}
    return own + tuple(label for label in inherited if label.key not in own_keys)


def format_attributes(labels: Iterable[Label]) -> str:
    """Render labels as TiDB's attribute string, `k=v,k1=v1`.

    `parse_attributes(format_attributes(labels)) == labels` for valid labels.

    Args:
        labels: The labels, in display order.

    Returns:
        The items joined by `,` with no spaces; `""` for no labels.
    """
    return ",".join(f"{label.key}={label.value}" for label in labels)


@dataclass(frozen=True)
class RegionLabelRow:
    """One row of `INFORMATION_SCHEMA.REGION_LABEL` as the seed shows it.

    Attributes:
        rule_id: RULE_ID, e.g. `schema/test/t1/p0`.
        rule_type: RULE_TYPE, `key-range`.
        region_label: REGION_LABEL, each label double-quoted, joined by `,`:
            `"merge_option=allow","a=b"`.
        ranges: RANGES, `[start, end]` per range, joined by `, `.
    """

    rule_id: str
    rule_type: str
    region_label: str
    ranges: str


def region_label_rows(rules: Iterable[LabelRuleValue]) -> list[RegionLabelRow]:
    """Render label rules as `INFORMATION_SCHEMA.REGION_LABEL` rows.

    REGION_LABEL follows TiDB's `RestoreRegionLabels`: each label is quoted on
    its own (`"k=v","k1=v1"`) and the `db`/`table`/`partition` keys TiDB
    stamps on rules are left out. Rows are sorted by rule id, descending, so
    a table's partition rules (`schema/test/t1/p0`) come before the table's
    own (`schema/test/t1`), as in the seed.

    Args:
        rules: The current label rules, in any order.

    Returns:
        One row per rule.
    """
    rows = [
        RegionLabelRow(
            rule_id=rule.rule_id,
            rule_type=rule.rule_type,
            region_label=",".join(
                f'"{format_attributes((label,))}"'
                for label in rule.labels
                if label.key not in HIDDEN_LABEL_KEYS
            ),
            ranges=", ".join(f"[{r.start_key}, {r.end_key}]" for r in rule.ranges),
        )
        for rule in rules
    ]
    return sorted(rows, key=lambda row: row.rule_id, reverse=True)
