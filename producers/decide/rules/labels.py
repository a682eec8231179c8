"""Region labels on the write side: the ATTRIBUTES commands and how label rules follow DDL.

The encoding of a rule (its id, key ranges, effective labels, the
REGION_LABEL rows) is `events.labels`, shared with the fold and Spark; this
module holds what only `decide` does with rules (seeds/tidb-region-label-sql.md):

- **The attribute string** of `ALTER TABLE t [PARTITION p] ATTRIBUTES='k=v[, k1=v1…]'`
  (`parse_attributes`). The seed says an attribute "can be any string that
  doesn't contain the reserved words" without listing them. metalog reserves
  exactly the tokens that would change what the string or the rule means:
  the characters `,` `=` (the item and key/value separators) and `"` `'`
  (the quotes of the SQL literal and of the REGION_LABEL display);
  `DEFAULT`, case-insensitive, as a whole key or value (`ATTRIBUTES=DEFAULT`
  is the reset, so a label spelled `default` would read as one); and the
  keys `db`, `table` and `partition`, case-insensitive (TiDB's `Rule.Reset`
  stamps them with the rule's own names, so a user value would be silently
  overwritten). SQL reserved words (`SELECT`, `TABLE`…) are not reserved: the
  attributes sit inside a quoted literal, so the SQL parser never sees them.
- **Set and reset** (`set_attributes`, `reset_attributes`). A table rule
  covers the table and all its partitions; a partition's own rule wins over
  it. Setting the table's attributes later overrides the partitions' (the
  seed's "Priority"), so the same change deletes their rules. Resetting a
  target without a rule is rejected (`NoAttributes`): a no-op must not bump
  the versions.
- **Rules through DDL** (`follow_rules`, `swapped_rules`). Rule ids hold
  names and ranges hold ids, so a rename re-keys the rules (as TiDB's rename
  does), a truncate moves their ranges to the new ids, a dropped partition
  loses its rule, an exchange swaps the two rules, and a purge deletes them.
  A rule is the table's only if its ranges cover the table's (or the
  partition's) id (`events.labels.owned_rule`, which the reads use too): a
  dropped table's rules stay until purge, and a new table of the same name
  must not take them over or lose its own.
"""

from events.changes import Mutation
from events.commands import ResetAttributes, SetAttributes
from events.intents import AttributesReset, AttributesSet
from events.keys import label_rule_key, table_info_key
from events.labels import (
    HIDDEN_LABEL_KEYS,
    label_rule,
    owned_rule,
    partition_rule_ranges,
    rule_id,
    table_rule_ranges,
)
from events.values import Label, LabelRuleValue, TableInfoValue
from producers.decide.rules.common import (
    Change,
    at_version,
    bumped,
    check_version,
    delete,
    find_partition,
    live_table,
    put,
    qualified,
    touched,
)
from producers.errors import InvalidAttributes, NoAttributes
from projector.fold.image import Image
from projector.fold.view import View

RESERVED_CHARACTERS = frozenset(",=\"'")
"""Characters no key or value may contain."""

RESET_KEYWORD = "default"
"""`ATTRIBUTES=DEFAULT` resets a rule; no key or value may be this word."""

_FORMAT_HINT = "write `key=value[, key1=value1…]`"


# -- the attribute string --------------------------------------------------------


def parse_attributes(text: str) -> tuple[Label, ...]:
    """Parse a TiDB attribute string into labels, in the order given.

    Items are separated by `,`; whitespace around items, keys and values is
    trimmed. Keys keep their case but duplicates are found case-insensitively.
    `events.labels.format_attributes` writes labels back as such a string.

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
    if key.lower() in HIDDEN_LABEL_KEYS:  # the keys TiDB stamps on every rule itself
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


# -- set and reset ---------------------------------------------------------------


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
    if command.partition_name is None:
        rule = table_rule(image.head, info)
    else:
        find_partition(info, command.partition_name)
        rule = partition_rule(image.head, info, command.partition_name)
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


# -- rules through DDL -----------------------------------------------------------


def table_rule(view: View, info: TableInfoValue) -> LabelRuleValue | None:
    """The table's own rule, if it has one."""
    return owned_rule(view.label_rule(rule_id(info.schema_name, info.table_name)), info.table_id)


def partition_rule(view: View, info: TableInfoValue, name: str) -> LabelRuleValue | None:
    """A partition's own rule, if it has one."""
    for partition in info.partitions:
        if partition.name == name:
            rule = view.label_rule(rule_id(info.schema_name, info.table_name, name))
            return owned_rule(rule, partition.partition_id)
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


def swapped_rules(
    view: View,
    info: TableInfoValue,
    partition_name: str,
    other: TableInfoValue,
    moved_other: TableInfoValue,
) -> list[Mutation]:
    """ExchangePartition: the partition's and the plain table's rules swap ids and ranges.

    Each rule takes the other's rule id and the ranges of its new id: the
    partition now has the plain table's old id, and the plain table
    (`moved_other`) the partition's.
    """
    part_rule = partition_rule(view, info, partition_name)
    other_rule = table_rule(view, other)
    part_id = rule_id(info.schema_name, info.table_name, partition_name)
    other_id = rule_id(other.schema_name, other.table_name)
    out: list[Mutation] = []
    if other_rule is not None:
        swapped = label_rule(part_id, other_rule.labels, partition_rule_ranges(other.table_id))
        out.append(put(label_rule_key(part_id), swapped))
    elif part_rule is not None:
        out.append(delete(label_rule_key(part_id)))
    if part_rule is not None:
        swapped = label_rule(other_id, part_rule.labels, table_rule_ranges(moved_other))
        out.append(put(label_rule_key(other_id), swapped))
    elif other_rule is not None:
        out.append(delete(label_rule_key(other_id)))
    return out
