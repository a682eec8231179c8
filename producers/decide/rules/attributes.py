"""TiDB `ALTER TABLE t [PARTITION p] ATTRIBUTES`: set and reset label rules.

A table rule covers the table and all its partitions; a partition's own rule
wins over it. Setting the table's attributes later overrides the partitions'
(seeds/tidb-region-label-sql.md, "Priority"), so the same change deletes
their rules. Resetting a target without a rule is rejected (`NoAttributes`):
a no-op must not bump the versions.
"""

from events.changes import Mutation
from events.commands import ResetAttributes, SetAttributes
from events.intents import AttributesReset, AttributesSet
from events.keys import label_rule_key, table_info_key
from events.labels import label_rule, partition_rule_ranges, rule_id, table_rule_ranges
from events.values import LabelRuleValue, TableInfoValue
from producers.decide.attributes import parse_attributes
from producers.decide.rules.common import (
    Change,
    at_version,
    bumped,
    check_version,
    delete,
    live_table,
    put,
    qualified,
    touched,
)
from producers.decide.rules.label_rules import moved, partition_rule, table_rule
from producers.decide.rules.partitions import find_partition
from producers.errors import NoAttributes
from projector.fold.image import Image


def set_attributes(image: Image, command: SetAttributes) -> Change:
    """SetAttributes: PUT the rule; at table level also DELETE the partitions' rules."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    labels = parse_attributes(command.attributes)
    target = rule_id(info.schema_name, info.table_name, command.partition_name)
    overridden: list[Mutation] = []
    if command.partition_name is None:
        ranges = table_rule_ranges(info)
        for partition in info.partitions:
            own = partition_rule(image.head, info, partition.name)
            if own is not None:
                overridden.append(delete(label_rule_key(own.rule_id)))
    else:
        ranges = partition_rule_ranges(find_partition(info, command.partition_name).partition_id)
    rule = label_rule(target, labels, ranges)
    return Change(
        intent=AttributesSet(
            rule_id=target,
            table_id=info.table_id,
            partition_name=command.partition_name,
            labels=labels,
        ),
        requirements=(at_version(info),),
        mutations=(
            put(table_info_key(info.table_id), bumped(info)),
            put(label_rule_key(target), rule),
            *overridden,
        ),
        tables=touched(image, info.table_id),
    )


def reset_attributes(image: Image, command: ResetAttributes) -> Change:
    """ResetAttributes (`ATTRIBUTES=DEFAULT`): DELETE the rule, or `NoAttributes`."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    rule = _own_rule(image, info, command.partition_name)
    if rule is None:
        target = qualified(info.schema_name, info.table_name) + (
            f" partition `{command.partition_name}`" if command.partition_name else ""
        )
        raise NoAttributes(f"table `{target}` has no attributes of its own to reset: nothing to do")
    return Change(
        intent=AttributesReset(
            rule_id=rule.rule_id, table_id=info.table_id, partition_name=command.partition_name
        ),
        requirements=(at_version(info),),
        mutations=(put(table_info_key(info.table_id), bumped(info)), *moved(rule, None)),
        tables=touched(image, info.table_id),
    )


def _own_rule(
    image: Image, info: TableInfoValue, partition_name: str | None
) -> LabelRuleValue | None:
    if partition_name is None:
        return table_rule(image.head, info)
    find_partition(info, partition_name)
    return partition_rule(image.head, info, partition_name)
