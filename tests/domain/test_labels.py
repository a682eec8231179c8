"""Region label keys, rules and REGION_LABEL rows against TiDB's encoding and the seed."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.labels import (
    RegionLabelRow,
    effective_labels,
    encode_record_prefix,
    label_rule,
    memcomparable,
    partition_rule_ranges,
    record_key_range,
    region_label_rows,
    rule_id,
    table_rule_ranges,
)
from events.values import Column, KeyRange, Label, PartitionDef, TableInfoValue

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# The seed's keys: table t1 = 0x39 (57), p0 = 0x3a (58), p1 = 0x3b (59).
KEY_39 = "7480000000000000ff395f720000000000fa"
KEY_3A = "7480000000000000ff3a5f720000000000fa"
KEY_3B = "7480000000000000ff3b5f720000000000fa"
KEY_3C = "7480000000000000ff3c5f720000000000fa"

# The seed's two data rows, verbatim, padding included.
SEED_ROWS = """\
| schema/test/t1/p0 | key-range | "merge_option=allow" | [7480000000000000ff3a5f720000000000fa, 7480000000000000ff3b5f720000000000fa]                                                                                                                                                             |
| schema/test/t1    | key-range | "merge_option=deny"  | [7480000000000000ff395f720000000000fa, 7480000000000000ff3a5f720000000000fa], [7480000000000000ff3a5f720000000000fa, 7480000000000000ff3b5f720000000000fa], [7480000000000000ff3b5f720000000000fa, 7480000000000000ff3c5f720000000000fa] |
"""  # noqa: E501


def seed_table() -> TableInfoValue:
    """`test.t1` with the ids the seed's keys encode."""
    return TableInfoValue(
        table_id=57,
        catalog="def",
        schema_name="test",
        table_name="t1",
        columns=(Column(name="id", data_type="int"),),
        partitions=(
            PartitionDef(partition_id=58, name="p0"),
            PartitionDef(partition_id=59, name="p1"),
        ),
        version=1,
    )


def L(key: str, value: str) -> Label:
    return Label(key=key, value=value)


# --- record prefix and memcomparable ---------------------------------------


@pytest.mark.parametrize(
    ("physical_id", "id_bytes"),
    [
        (0, "8000000000000000"),
        (57, "8000000000000039"),
        (-1, "7fffffffffffffff"),
        (0x0123456789ABCDEF, "8123456789abcdef"),
        (INT64_MAX, "ffffffffffffffff"),
        (INT64_MIN, "0000000000000000"),
    ],
)
def test_record_prefix_flips_the_sign_bit(physical_id: int, id_bytes: str) -> None:
    assert encode_record_prefix(physical_id) == b"t" + bytes.fromhex(id_bytes) + b"_r"


@pytest.mark.parametrize("physical_id", [INT64_MAX + 1, INT64_MIN - 1])
def test_record_prefix_rejects_ids_outside_int64(physical_id: int) -> None:
    with pytest.raises(ValueError, match="signed 64-bit"):
        encode_record_prefix(physical_id)


@pytest.mark.parametrize(
    ("data", "encoded"),
    [
        (b"", "0000000000000000 f7"),
        (b"\x01", "0100000000000000 f8"),
        (b"abcdefg", "61626364656667 00 fe"),
        (b"abcdefgh", "6162636465666768 ff 0000000000000000 f7"),
        (b"abcdefghi", "6162636465666768 ff 6900000000000000 f8"),
        (b"abcdefghABCDEFGH", "6162636465666768 ff 4142434445464748 ff 0000000000000000 f7"),
    ],
    ids=["0", "1", "7", "8", "9", "16"],
)
def test_memcomparable_groups_pads_and_marks(data: bytes, encoded: str) -> None:
    assert memcomparable(data) == bytes.fromhex(encoded)


def test_seed_keys_decode_to_ids_57_58_59() -> None:
    assert record_key_range(0x39) == KeyRange(start_key=KEY_39, end_key=KEY_3A)
    assert record_key_range(0x3A) == KeyRange(start_key=KEY_3A, end_key=KEY_3B)
    assert record_key_range(0x3B) == KeyRange(start_key=KEY_3B, end_key=KEY_3C)


def test_range_of_the_last_id_is_refused() -> None:
    with pytest.raises(ValueError, match="signed 64-bit"):
        record_key_range(INT64_MAX)


@given(st.lists(st.integers(INT64_MIN, INT64_MAX - 1), min_size=2, max_size=2, unique=True))
def test_keys_sort_in_id_order(ids: list[int]) -> None:
    a, b = sorted(ids)
    assert memcomparable(encode_record_prefix(a)) < memcomparable(encode_record_prefix(b))
    range_a, range_b = record_key_range(a), record_key_range(b)
    assert range_a.start_key < range_a.end_key <= range_b.start_key < range_b.end_key


# --- rules -----------------------------------------------------------------


def test_rule_ids() -> None:
    assert rule_id("test", "t1") == "schema/test/t1"
    assert rule_id("test", "t1", "p0") == "schema/test/t1/p0"


def test_table_rule_lists_the_table_then_its_partitions() -> None:
    assert table_rule_ranges(seed_table()) == (
        KeyRange(start_key=KEY_39, end_key=KEY_3A),
        KeyRange(start_key=KEY_3A, end_key=KEY_3B),
        KeyRange(start_key=KEY_3B, end_key=KEY_3C),
    )
    assert partition_rule_ranges(58) == (KeyRange(start_key=KEY_3A, end_key=KEY_3B),)


def test_table_rule_ranges_follow_id_order_after_a_truncated_partition() -> None:
    # TRUNCATE PARTITION p0 gives p0 a new, larger id; ranges stay in key order.
    table = seed_table().model_copy(
        update={
            "partitions": (
                PartitionDef(partition_id=60, name="p0"),
                PartitionDef(partition_id=59, name="p1"),
            )
        }
    )
    assert table_rule_ranges(table) == tuple(record_key_range(i) for i in (57, 59, 60))


def test_unpartitioned_table_has_one_range() -> None:
    table = seed_table().model_copy(update={"partitions": ()})
    assert table_rule_ranges(table) == (record_key_range(57),)


def test_label_rule_is_key_range() -> None:
    rule = label_rule("schema/test/t1", (L("a", "b"),), partition_rule_ranges(57))
    assert rule.rule_type == "key-range"
    assert rule.labels == (L("a", "b"),)


# --- inheritance and priority ----------------------------------------------


def test_partition_inherits_the_table_labels() -> None:
    table = label_rule("schema/test/t1", (L("merge_option", "deny"), L("a", "1")), ())
    assert effective_labels(table, None) == (L("merge_option", "deny"), L("a", "1"))


def test_partition_label_wins_per_key() -> None:
    table = label_rule("schema/test/t1", (L("merge_option", "deny"), L("a", "1")), ())
    part = label_rule("schema/test/t1/p0", (L("b", "2"), L("merge_option", "allow")), ())
    assert effective_labels(table, part) == (
        L("b", "2"),
        L("merge_option", "allow"),
        L("a", "1"),
    )


def test_partition_rule_alone_and_no_rules() -> None:
    part = label_rule("schema/test/t1/p0", (L("merge_option", "allow"),), ())
    assert effective_labels(None, part) == (L("merge_option", "allow"),)
    assert effective_labels(None, None) == ()


# --- INFORMATION_SCHEMA.REGION_LABEL ---------------------------------------


def test_region_label_rows_reproduce_the_seed() -> None:
    table = seed_table()
    table_rule = label_rule(
        rule_id(table.schema_name, table.table_name),
        (L("merge_option", "deny"),),
        table_rule_ranges(table),
    )
    p0 = table.partitions[0]
    p0_rule = label_rule(
        rule_id(table.schema_name, table.table_name, p0.name),
        (L("merge_option", "allow"),),
        partition_rule_ranges(p0.partition_id),
    )
    expected = [
        RegionLabelRow(*(cell.strip() for cell in line.strip("|").split("|")))
        for line in SEED_ROWS.splitlines()
    ]
    assert region_label_rows([table_rule, p0_rule]) == expected
    assert region_label_rows([p0_rule, table_rule]) == expected


def test_region_label_quotes_each_label_and_hides_tidb_keys() -> None:
    rule = label_rule(
        "schema/test/t2",
        (L("merge_option", "deny"), L("db", "test"), L("k", "v"), L("table", "t2")),
        (record_key_range(7),),
    )
    (row,) = region_label_rows([rule])
    assert row.region_label == '"merge_option=deny","k=v"'
    assert row.ranges == f"[{rule.ranges[0].start_key}, {rule.ranges[0].end_key}]"


def test_rows_sort_by_rule_id_descending() -> None:
    ids = ["schema/a/t", "schema/b/t", "schema/a/t/p1", "schema/a/t/p0"]
    rows = region_label_rows(label_rule(i, (), ()) for i in ids)
    assert [row.rule_id for row in rows] == [
        "schema/b/t",
        "schema/a/t/p1",
        "schema/a/t/p0",
        "schema/a/t",
    ]
