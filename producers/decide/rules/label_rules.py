"""How a table's label rules follow it through DDL (seeds/tidb-region-label-sql.md).

Rule ids hold names (`schema/{db}/{table}[/{partition}]`) and ranges hold ids,
so a rename re-keys the rules (as TiDB's rename does), a truncate moves their
ranges to the new ids, a dropped partition loses its rule, and a purge deletes
them. A rule is the table's only if its ranges cover the table's (or the
partition's) id: a dropped table's rules stay until purge, and a new table of
the same name must not take them over or lose its own.
"""

from events.changes import Mutation
from events.keys import label_rule_key
from events.labels import (
    label_rule,
    partition_rule_ranges,
    record_key_range,
    rule_id,
    table_rule_ranges,
)
from events.values import LabelRuleValue, TableInfoValue
from producers.decide.rules.common import delete, put
from projector.fold.view import View


def owned(rule: LabelRuleValue | None, physical_id: int) -> LabelRuleValue | None:
    """The rule if its ranges cover `physical_id`, else None."""
    if rule is None or record_key_range(physical_id) not in rule.ranges:
        return None
    return rule


def table_rule(view: View, info: TableInfoValue) -> LabelRuleValue | None:
    """The table's own rule, if it has one."""
    return owned(view.label_rule(rule_id(info.schema_name, info.table_name)), info.table_id)


def partition_rule(view: View, info: TableInfoValue, name: str) -> LabelRuleValue | None:
    """A partition's own rule, if it has one."""
    for partition in info.partitions:
        if partition.name == name:
            rule = view.label_rule(rule_id(info.schema_name, info.table_name, name))
            return owned(rule, partition.partition_id)
    return None


def moved(old: LabelRuleValue, new: LabelRuleValue | None) -> list[Mutation]:
    """Replace `old` by `new` (None deletes it); nothing when they are equal."""
    if new == old:
        return []
    out = []
    if new is None or new.rule_id != old.rule_id:
        out.append(delete(label_rule_key(old.rule_id)))
    if new is not None:
        out.append(put(label_rule_key(new.rule_id), new))
    return out


def follow_table_rule(
    view: View, old: TableInfoValue, new: TableInfoValue | None
) -> list[Mutation]:
    """Move the table's rule to `new`'s name and ids (None: delete it)."""
    rule = table_rule(view, old)
    if rule is None:
        return []
    target = None
    if new is not None:
        target = label_rule(
            rule_id(new.schema_name, new.table_name), rule.labels, table_rule_ranges(new)
        )
    return moved(rule, target)


def follow_partition_rules(
    view: View, old: TableInfoValue, new: TableInfoValue | None
) -> list[Mutation]:
    """Move each partition's rule to `new`'s names and ids; a partition gone loses it."""
    after = {p.name: p.partition_id for p in new.partitions} if new is not None else {}
    out: list[Mutation] = []
    for partition in old.partitions:
        rule = partition_rule(view, old, partition.name)
        if rule is None:
            continue
        target = None
        if new is not None and partition.name in after:
            target = label_rule(
                rule_id(new.schema_name, new.table_name, partition.name),
                rule.labels,
                partition_rule_ranges(after[partition.name]),
            )
        out.extend(moved(rule, target))
    return out


def follow_rules(view: View, old: TableInfoValue, new: TableInfoValue | None) -> list[Mutation]:
    """Move every rule of the table and its partitions to `new` (None: delete them)."""
    return follow_table_rule(view, old, new) + follow_partition_rules(view, old, new)
