"""The seed's REGION_LABEL example (seeds/tidb-region-label-sql.md), exactly, through DuckDB."""

from __future__ import annotations

from events.changes import Mutation, MutationOp
from events.keys import label_rule_key, table_info_key, table_name_key
from events.labels import label_rule, partition_rule_ranges, rule_id, table_rule_ranges
from events.values import Column, Label, PartitionDef, TableInfoValue, TableNameValue
from producers.sql.engine import Engine
from projector.fold.draft import mutated
from projector.fold.image import Image

SEED = [
    ("schema/test/t1/p0", "key-range", '"merge_option=allow"',
     "[7480000000000000ff3a5f720000000000fa, 7480000000000000ff3b5f720000000000fa]"),
    ("schema/test/t1", "key-range", '"merge_option=deny"',
     "[7480000000000000ff395f720000000000fa, 7480000000000000ff3a5f720000000000fa], "
     "[7480000000000000ff3a5f720000000000fa, 7480000000000000ff3b5f720000000000fa], "
     "[7480000000000000ff3b5f720000000000fa, 7480000000000000ff3c5f720000000000fa]"),
]  # fmt: skip
"""Copied from the seed: table test.t1 is id 57, its partitions p0 and p1 are 58 and 59."""


def seed_image() -> Image:
    t1 = TableInfoValue(table_id=57, catalog="c", schema_name="test", table_name="t1",
                        columns=(Column(name="id", data_type="INT"),), version=3,
                        partitions=(PartitionDef(partition_id=58, name="p0"),
                                    PartitionDef(partition_id=59, name="p1")))  # fmt: skip
    rules = [
        label_rule(rule_id("test", "t1"), (Label(key="merge_option", value="deny"),),
                   table_rule_ranges(t1)),
        label_rule(rule_id("test", "t1", "p0"), (Label(key="merge_option", value="allow"),),
                   partition_rule_ranges(58)),
    ]  # fmt: skip
    view = mutated(Image.empty("c").published, [
        Mutation(key=table_info_key(57), op=MutationOp.PUT, value=t1),
        Mutation(key=table_name_key("c", "test", "t1"), op=MutationOp.PUT,
                 value=TableNameValue(table_id=57)),
        *(Mutation(key=label_rule_key(r.rule_id), op=MutationOp.PUT, value=r) for r in rules),
    ])  # fmt: skip
    return Image(catalog="c", head=view, published=view)


def test_region_label_matches_the_seed_exactly() -> None:
    result = Engine(seed_image()).query("SELECT * FROM region_label")
    assert result.columns == ("RULE_ID", "RULE_TYPE", "REGION_LABEL", "RANGES")
    assert list(result.rows) == SEED


def test_attributes_has_tidbs_columns_and_the_same_rows() -> None:
    result = Engine(seed_image()).query("SELECT * FROM attributes")
    assert result.columns == ("ID", "TYPE", "ATTRIBUTES", "RANGES")
    assert list(result.rows) == SEED


def test_show_attributes_gives_p1_the_inherited_label() -> None:
    rows = Engine(seed_image()).show_attributes("test", "t1", None).rows
    assert {r[0]: r[2] for r in rows} == {
        "schema/test/t1": '"merge_option=deny"', "schema/test/t1/p0": '"merge_option=allow"',
        "schema/test/t1/p1": '"merge_option=deny"'}
    p1 = "[7480000000000000ff3b5f720000000000fa, 7480000000000000ff3c5f720000000000fa]"
    assert {r[0]: r[3] for r in rows}["schema/test/t1/p1"] == p1
