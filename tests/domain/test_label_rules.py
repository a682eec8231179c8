"""TiDB region labels through DDL: set, reset, inheritance, priority, lifecycle."""

import pytest

from events.commands import (
    DropTable,
    PurgeTable,
    RecoverTable,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    TruncateTable,
)
from events.intents import AttributesSet
from events.labels import partition_rule_ranges, record_key_range
from events.values import Label, LabelRuleValue
from producers.errors import InvalidAttributes, NoAttributes, PartitionNotFound
from producers.leader.local import LocalCatalog
from projector.fold.export import region_label_rows
from tests.domain.builders import command, create, deleted, last, local, writes

TABLE_RULE = "__label_rule/schema/public/orders"
P0_RULE = "__label_rule/schema/public/orders/p0"


def _set(attributes: str, partition: str | None = None) -> SetAttributes:
    return command(
        SetAttributes, table_name="orders", partition_name=partition, attributes=attributes
    )


def _labels(text: str) -> tuple[Label, ...]:
    return tuple(Label(key=k, value=v) for k, v in (i.split("=") for i in text.split(",")))


def _partitioned() -> LocalCatalog:
    catalog = local()
    catalog.submit(create(partitions=("p0", "p1")))
    return catalog


def test_set_on_a_table_puts_a_key_range_rule_covering_the_table_and_all_partitions() -> None:
    catalog = _partitioned()
    catalog.submit(_set("merge_option=deny"))
    event = last(catalog)
    assert event.intent == AttributesSet(
        rule_id="schema/public/orders", table_id=1, labels=_labels("merge_option=deny")
    )
    rule = writes(event)[TABLE_RULE]
    assert isinstance(rule, LabelRuleValue) and rule.rule_type == "key-range"
    assert rule.ranges == tuple(record_key_range(i) for i in (1, 2, 3))
    assert catalog.image.head.table(1).version == 2  # type: ignore[union-attr]
    assert catalog.image.head.attributes("public", "orders") == _labels("merge_option=deny")


def test_a_partition_inherits_the_table_labels_and_its_own_rule_wins() -> None:
    catalog = _partitioned()
    catalog.submit(_set("merge_option=deny,a=1"))
    catalog.submit(_set("merge_option=allow", "p0"))
    rule = writes(last(catalog))[P0_RULE]
    assert isinstance(rule, LabelRuleValue) and rule.ranges == partition_rule_ranges(2)
    head = catalog.image.head
    assert head.attributes("public", "orders", "p0") == _labels("merge_option=allow,a=1")
    assert head.attributes("public", "orders", "p1") == _labels("merge_option=deny,a=1")


def test_a_later_table_level_set_removes_the_partitions_own_rules_in_the_same_change() -> None:
    catalog = _partitioned()
    catalog.submit(_set("merge_option=allow", "p0"))
    catalog.submit(_set("merge_option=deny"))
    event = last(catalog)
    assert deleted(event) == {P0_RULE}
    assert TABLE_RULE in writes(event)
    assert catalog.image.head.attributes("public", "orders", "p0") == _labels("merge_option=deny")


def test_reset_deletes_the_rule_and_reset_without_a_rule_is_no_attributes() -> None:
    catalog = _partitioned()
    catalog.submit(_set("a=1", "p1"))
    catalog.submit(command(ResetAttributes, table_name="orders", partition_name="p1"))
    assert deleted(last(catalog)) == {"__label_rule/schema/public/orders/p1"}
    with pytest.raises(NoAttributes, match="no attributes of its own"):
        catalog.submit(command(ResetAttributes, table_name="orders"))
    assert catalog.image.head.label_rules() == ()


def test_a_malformed_attribute_string_or_unknown_partition_is_rejected() -> None:
    catalog = _partitioned()
    with pytest.raises(InvalidAttributes):
        catalog.submit(_set("novalue"))
    with pytest.raises(PartitionNotFound, match="no partition `p9`"):
        catalog.submit(_set("a=1", "p9"))


def test_drop_table_keeps_rules_until_purge_and_recover_leaves_them_unchanged() -> None:
    catalog = _partitioned()
    catalog.submit(_set("a=1"))
    catalog.submit(_set("b=2", "p0"))
    rules = catalog.image.head.label_rules()
    catalog.submit(command(DropTable, table_name="orders"))
    assert catalog.image.head.label_rules() == rules
    catalog.submit(command(RecoverTable, table_name="orders"))
    assert not any(k.startswith("__label_rule") for k in writes(last(catalog)))
    assert catalog.image.head.label_rules() == rules
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(command(PurgeTable, table_id=1))
    assert catalog.image.head.label_rules() == ()


def test_purge_leaves_the_rule_of_a_newer_table_with_the_same_name() -> None:
    catalog = local()
    catalog.submit(create())
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(create())
    catalog.submit(_set("a=1"))
    catalog.submit(command(PurgeTable, table_id=1))
    assert TABLE_RULE not in deleted(last(catalog))
    assert catalog.image.head.attributes("public", "orders") == _labels("a=1")


def test_truncate_table_moves_every_key_to_new_ids_and_the_rule_ranges_follow() -> None:
    catalog = _partitioned()
    catalog.submit(_set("a=1"))
    catalog.submit(_set("b=2", "p0"))
    catalog.submit(command(TruncateTable, table_name="orders"))
    event = last(catalog)
    assert {"__table_info/1", "__table_route/1", "__dn_table/1/1"} <= deleted(event)
    head = catalog.image.head
    info = head.table(4)
    assert info is not None and [p.partition_id for p in info.partitions] == [5, 6]
    assert head.table_id("public", "orders") == 4 and head.table(1) is None
    assert head.route(4).region_routes[0].region_id == 4 << 32  # type: ignore[union-attr]
    assert [v.table_id for v in head.datanode_tables(1)] == [4]
    assert head.label_rule("schema/public/orders").ranges == tuple(  # type: ignore[union-attr]
        record_key_range(i) for i in (4, 5, 6)
    )
    assert head.label_rule("schema/public/orders/p0").ranges == partition_rule_ranges(5)  # type: ignore[union-attr]
    # The new id takes the name above the version id 1 leaves it at (4), not at 1.
    assert [(t.table_id, t.version) for t in event.tables] == [(1, 4), (4, 5)]


def test_rename_re_keys_the_rules_to_the_new_name() -> None:
    catalog = _partitioned()
    catalog.submit(_set("a=1"))
    catalog.submit(_set("b=2", "p0"))
    catalog.submit(command(RenameTable, table_name="orders", new_table_name="sales"))
    assert deleted(last(catalog)) >= {TABLE_RULE, P0_RULE}
    head = catalog.image.head
    assert head.attributes("public", "sales", "p0") == _labels("b=2,a=1")
    assert head.label_rule("schema/public/orders") is None


def test_region_label_rows_of_the_image_render_tidbs_information_schema_table() -> None:
    catalog = _partitioned()
    catalog.submit(_set("merge_option=deny"))
    catalog.submit(_set("merge_option=allow", "p0"))
    rows = region_label_rows(catalog.image)
    assert [(r.rule_id, r.region_label) for r in rows] == [
        ("schema/public/orders/p0", '"merge_option=allow"'),
        ("schema/public/orders", '"merge_option=deny"'),
    ]
