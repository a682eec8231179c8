"""Hypothesis strategies of command steps for the property tests of issue 15.

A step is drawn without the state it will meet;
`tests.domain.step_commands.build(image, step)` turns it into a command
against that state: `table=i` is the i-th live table (by id,
modulo their number; `partitioned`/`plain` ones where the command needs it),
`part=i` its i-th partition, an epoch is relative to the stable one. New names
come from a pool of four, so names are freed and taken again. `valid_steps`
stay inside the rules of DESIGN.md ("Names, values and sizes");
`hostile_steps` do not (empty, long, `/`, NUL and control-character names,
zero or duplicate columns, out-of-range ints, events too large for the topic).
Commands are built with `model_construct`, never validated here: a command
read from the topic may come from any producer, so `decide` must refuse what
is wrong.
"""

import itertools
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from hypothesis import strategies as st

from events.commands import (
    CommandBase,
    TableCommand,
)
from events.keys import TABLE_INFO
from events.values import TableInfoValue
from projector.fold.image import Image
from tests.domain.builders import CATALOG, SCHEMA

NAMES = ("a", "b", "c", "d")
PARTS = ("p0", "p1", "p2")
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

C = TypeVar("C", bound=CommandBase)
_command_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Step:
    """One drawn step: a kind and its fields, printed like a call in falsifying examples."""

    kind: str
    fields: tuple[tuple[str, Any], ...] = ()

    def __repr__(self) -> str:
        return f"{self.kind}({', '.join(f'{k}={v!r}' for k, v in self.fields)})"


@dataclass(frozen=True, slots=True)
class Long:
    """A string of `size` characters `n`, spelt out only in the command (`make`).

    Steps hold this, not the string: hypothesis prints the failing steps, and a
    300 kB string would fill the report.
    """

    size: int

    def __repr__(self) -> str:
        return f"'n' * {self.size}"


def _step(kind: str, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Step]:
    return st.fixed_dictionaries(fields).map(lambda drawn: Step(kind, tuple(drawn.items())))


def _steps(weight: int, kind: str, **fields: st.SearchStrategy[Any]) -> list[Any]:
    """`weight` copies of a step's strategy (`one_of` drops repeats of one strategy object)."""
    return [_step(kind, **fields) for _ in range(weight)]


PRESET = (
    Step("create", (("name", "a"), ("partitions", 2), ("regions", 2), ("datanodes", (1, 2)))),
    Step("create", (("name", "b"), ("partitions", 0), ("regions", 1), ("datanodes", (1,)))),
    Step("create", (("name", "c"), ("partitions", 0), ("regions", 2), ("datanodes", (1, 3)))),
)
"""Three tables every run starts from, so most commands find something to change."""

_name = st.sampled_from(NAMES)
_pick = st.integers(0, 5)
_publish_at = st.sampled_from(("stable", "+1", "+2", "+3", "highest", "highest+1"))

valid_steps: st.SearchStrategy[Step] = st.one_of(
    *_steps(1, "reload"),
    *_steps(
        2,
        "create",
        name=_name,
        partitions=st.integers(0, 3),
        regions=st.integers(1, 3),
        datanodes=st.lists(st.integers(1, 4), min_size=1, max_size=3, unique=True).map(tuple),
    ),
    *_steps(2, "drop", table=_pick),
    *_steps(1, "recover", name=_name),
    *_steps(1, "purge", table=_pick),
    *_steps(2, "rename", table=_pick, new_name=_name),
    *_steps(1, "alter", table=_pick, column=st.integers(0, 3)),
    *_steps(2, "truncate", table=_pick),
    *_steps(1, "add_partition", table=_pick, name=st.sampled_from(PARTS)),
    *_steps(1, "drop_partition", table=_pick, part=_pick),
    *_steps(2, "truncate_partition", table=_pick, part=_pick),
    *_steps(2, "exchange", table=_pick, part=_pick, other=_pick),
    *_steps(1, "failover", table=_pick, region=_pick, to=st.integers(1, 4)),
    *_steps(1, "set_attributes", table=_pick, part=st.none() | _pick, value=st.integers(0, 2)),
    *_steps(1, "reset_attributes", table=_pick, part=st.none() | _pick),
    *_steps(1, "set_mode", mode=st.sampled_from(("explicit", "auto"))),
    *_steps(6, "publish", table=_pick, epoch=_publish_at),
    *_steps(2, "advance", to=st.sampled_from(("+1", "+2", "highest"))),
)
"""Steps within every rule; publishes and releases are a quarter of them."""

role_steps: st.SearchStrategy[Step] = st.one_of(
    valid_steps,
    *_steps(4, "exchange", table=_pick, part=_pick, other=_pick),
    *_steps(2, "truncate", table=_pick),
    *_steps(2, "truncate_partition", table=_pick, part=_pick),
)
"""Valid steps, more of them giving ids new roles (exchange, truncate)."""

HOSTILE_NAMES = (
    *("", " ", "/", "a/", "/a", "a/b", "b/c", "x\x00y", "tab\tname", "\x7f", "\x85", "\u200b"),
    *("x" * 64, "x" * 65, "é" * 64, "名" * 65, "😀" * 64, "__removed-", "public"),
)
LONG_NAME = Long(300_000)
"""A name of 300,000 characters: its event (four copies) is over 1 MB whatever the margin."""
HOSTILE_INTS = (LONG_MAX, LONG_MAX - 1, 2**62, 2**32, 2**31, 0, -1, LONG_MIN)
MANY_REGIONS = 110_000
"""110,000 regions encode to some 1.09 MB, over Kafka's default record limit; they take
today's decide most of a second to build, so only the size test draws them, rarely.
Counts near 2**63 are left out: today's decide would loop over them for hours (and
tests take no timing thresholds)."""
BIG = (1_000, 300_000, 1_100_000)
"""UTF-8 sizes of a big option or attribute value: three alters of 300 kB pass 1 MB."""

_hostile_name = st.sampled_from((*HOSTILE_NAMES, *NAMES, LONG_NAME)) | st.text(max_size=8)
_hostile_int = st.sampled_from(HOSTILE_INTS) | st.integers(LONG_MIN, LONG_MAX)
_hostile_epoch = st.sampled_from((LONG_MAX, LONG_MAX - 1)) | _hostile_int
_column = st.sampled_from(("id", "name", "", "x/y", "c\x00", "é"))
_columns_drawn = st.lists(_column, max_size=3).map(tuple)
_addressed = {
    # Two names whose keys are the same string once `/` is let into a name.
    "target": st.sampled_from((("a", "b/c"), ("a/b", "c"))),
    "action": st.sampled_from(("create", "alter", "drop")),
}
_HOSTILE = (
    *_steps(
        2,
        "create_with",
        schema=st.sampled_from((SCHEMA, "a", "a/b", "")),
        name=_hostile_name,
        columns=_columns_drawn,
        primary_key=st.lists(st.sampled_from(("id", "zz")), max_size=2).map(tuple),
        partitions=st.lists(_hostile_name, max_size=3).map(tuple),
        regions=st.sampled_from((1, 2, 20_000, 0, -1)),
        datanodes=st.lists(st.integers(1, 3) | _hostile_int, max_size=3).map(tuple),
    ),
    _step("drop_with", schema=st.sampled_from((SCHEMA, "a/b")), name=_hostile_name),
    _step("alter_with", table=_pick, add=_columns_drawn, drop=_columns_drawn),
    _step("rename_to", table=_pick, new_name=_hostile_name),
    _step("add_partition", table=_pick, name=_hostile_name),
    _step("exchange_with", table=_pick, part=_pick, schema=_hostile_name, other=_hostile_name),
    _step("attributes_with", table=_pick, part=_hostile_name),
    *_steps(2, "alter_big", table=_pick, size=st.sampled_from(BIG)),
    *_steps(2, "attributes_big", table=_pick, size=st.sampled_from(BIG)),
    _step("publish_id", table_id=_hostile_int, epoch=_publish_at),
    _step("publish_at", table=_pick, epoch=_hostile_epoch),
    *_steps(2, "advance_at", epoch=_hostile_epoch),
    _step("failover_with", table=_pick, region=_hostile_int, to=_hostile_int),
    _step("recover_id", name=_name, table_id=_hostile_int),
    _step("purge_id", table_id=_hostile_int),
    _step("reload_at", expected_resource_version=_hostile_int),
    _step("alter_at", table=_pick, expected_version=_hostile_int),
)


def hostile_steps(many_regions: bool = False, addressed: int = 2) -> st.SearchStrategy[Step]:
    """Steps that break a rule, or push ints and sizes to their limits.

    Args:
        many_regions: Also create tables of `MANY_REGIONS` regions.
        addressed: The weight of the steps addressing `a`.`b/c` and `a/b`.`c`.
    """
    sizes = st.sampled_from(BIG)
    regions = st.sampled_from((1, 1, 1, 20_000, 20_000, MANY_REGIONS) if many_regions else (1,))
    big = _steps(2, "create_big", name=_name, regions=regions, size=sizes)
    return st.one_of(*_HOSTILE, *big, *_steps(addressed, "addressed", **_addressed))


def plans(
    steps: st.SearchStrategy[Step], min_size: int = 8, max_size: int = 40
) -> st.SearchStrategy[list[Step]]:
    """Sequences of steps, some 15 long on average.

    `st.lists` keeps most lists near `min_size` + 5 steps, and most properties
    need several steps to meet (a name freed then taken, epochs interleaved).
    Shrunk examples keep `min_size` steps, padded with the simplest, `reload()`;
    drawing the length first (`flatmap`) avoids the padding but shrinks
    several times slower.
    """
    return st.lists(steps, min_size=min_size, max_size=max_size)


MODES = st.sampled_from(("auto", "explicit"))
"""Both publish modes."""
MIXED = plans(st.one_of(valid_steps, hostile_steps()))
"""Valid and hostile steps, interleaved: what the properties play by default."""


def make(kind: type[C], **fields: Any) -> C:
    """A command without validation: a fresh command_id, the test catalog, schema `public`."""
    fields.setdefault("command_id", f"cmd-{next(_command_ids)}")
    fields.setdefault("catalog", CATALOG)
    fields.setdefault("actor", "tester")
    if issubclass(kind, TableCommand):
        fields.setdefault("schema_name", SCHEMA)
    return cast(C, kind.model_construct(**{k: _spelt(v) for k, v in fields.items()}))


def _spelt(value: Any) -> Any:
    if isinstance(value, Long):
        return "n" * value.size
    if isinstance(value, tuple):
        return tuple(_spelt(v) for v in value)
    return value


def live_tables(image: Image) -> list[TableInfoValue]:
    """The live tables, by id."""
    prefix = TABLE_INFO + "/"
    ids = sorted(int(k[len(prefix) :]) for k in image.head.values if k.startswith(prefix))
    return [info for info in map(image.head.table, ids) if info is not None]


def unpublished_ids(image: Image) -> list[int]:
    """The ids of the tables with a pending change that has no epoch yet."""
    return sorted(
        t
        for t in image.pending_by_table
        if any(c.schema_epoch == 0 for c in image.pending_changes(t))
    )


def epoch(image: Image, spec: str) -> int:
    """`stable`, `+n` (above stable), `highest` (the highest assigned, or stable), `highest+1`.

    At most `LONG_MAX`: a command from the topic holds Avro longs, nothing larger.
    """
    highest = max((c.schema_epoch for c in image.pending.values()), default=image.stable_epoch)
    if spec.startswith("highest"):
        wanted = max(highest, image.stable_epoch) + spec.count("+1")
    else:
        wanted = image.stable_epoch + (0 if spec == "stable" else int(spec))
    return min(wanted, LONG_MAX)
