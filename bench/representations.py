"""The hot path's record representations side by side: build, read and copy one alter's records.

Run: `.venv/bin/python -m bench.representations` (a few seconds). One alter builds
its records (the table versions, the requirement, the intent, the bumped table info
with its 8 columns, the mutation and the event's 16 fields), reads every field of
them once (what the writer and the fold do) and copies the info with two fields
changed (what the rule does). Each form does the same work:

- `pydantic validated`: the models built by validation (the edge: client, CLI, SQL);
- `pydantic trusted`: the same models built without validation (`producers.decide.trusted`,
  what decide does today) and copied with `trusted.replaced`;
- `named tuple`: `projector.fold.packed_events`' kind of form, `_replace` to copy;
- `tuple`: plain tuples, fields by index (the least Python can do);
- `msgspec.Struct` (frozen, `structs.replace`): only if `msgspec` imports (it is
  not a dependency; `pip install --target DIR msgspec` and `PYTHONPATH=DIR` to try it).

CPU time (`time.process_time`), the best of `--rounds` rounds of `--alters` alters,
every form in turn each round, so load from other processes hits all alike.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import namedtuple
from collections.abc import Callable
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from events.changes import KeyAtVersion, Mutation, MutationOp
from events.event import Event
from events.intents import TableAltered
from events.values import Column, TableInfoValue, TableVersion
from producers.decide.trusted import replaced, trusted

MODELS = (TableVersion, KeyAtVersion, TableAltered, Column, TableInfoValue, Mutation, Event)
_WHEN = datetime(2026, 1, 2, tzinfo=UTC)
_COLUMNS = [(f"c{n}", "BIGINT" if n % 2 else "STRING", n % 3 != 0, None) for n in range(8)]


def _fields(model: type[Any]) -> list[str]:
    return list(model.model_fields)


_READ = {model: attrgetter(*_fields(model)) for model in MODELS}


def pydantic_form(validated: bool) -> Callable[[int], object]:
    """One alter's records as the wire models, validated or trusted."""
    make: Callable[..., Any] = (lambda m, **v: m(**v)) if validated else trusted
    columns = tuple(make(Column, name=n, data_type=t, nullable=u, default_value=d)
                    for n, t, u, d in _COLUMNS)  # fmt: skip
    info = make(TableInfoValue, table_id=7, catalog="bench", schema_name="s",
                table_name="t7", columns=columns, options={"ttl": "1d"}, version=3)  # fmt: skip
    copy: Callable[..., Any] = (lambda m, **u: m.model_copy(update=u)) if validated else replaced

    def alter(n: int) -> object:
        bumped = copy(info, options={"ttl": f"{n}d"}, version=info.version + 1)
        event = make(
            Event, event_id="e", catalog="bench", resource_version=n, leader_epoch=1,
            schema_epoch=n, command_id="c", actor="bench", occurred_at=_WHEN,
            tables=(make(TableVersion, table_id=7, version=4),),
            intent=make(TableAltered, table_id=7, set_options={"ttl": f"{n}d"}),
            requirements=(make(KeyAtVersion, key="__table_info/7", version=3),),
            mutations=(make(Mutation, key="__table_info/7", op=MutationOp.PUT, value=bumped),),
            prev_hash=b"", hash=b"",
        )  # fmt: skip
        return _read_models(event)

    return alter


def _read_models(event: Any) -> int:
    read = _READ
    count = len(read[Event](event))
    count += len(read[TableVersion](event.tables[0]))
    count += len(read[TableAltered](event.intent))
    count += len(read[KeyAtVersion](event.requirements[0]))
    mutation = event.mutations[0]
    count += len(read[Mutation](mutation))
    count += len(read[TableInfoValue](mutation.value))
    return count + sum(len(read[Column](c)) for c in mutation.value.columns)


def tuple_form(kind: str) -> Callable[[int], object]:
    """One alter's records as named tuples (`kind="named"`) or msgspec Structs."""
    forms: dict[type[Any], Any] = {}
    for model in MODELS:
        names = _fields(model)
        if kind == "named":
            forms[model] = namedtuple(model.__name__, names)
        else:
            import msgspec

            forms[model] = msgspec.defstruct(model.__name__, names, frozen=True)
    if kind == "named":
        copy: Callable[..., Any] = lambda record, **update: record._replace(**update)  # noqa: E731
    else:
        import msgspec

        copy = msgspec.structs.replace
    f = forms
    columns = tuple(f[Column](n, t, u, d) for n, t, u, d in _COLUMNS)
    info = f[TableInfoValue]("TableInfoValue", 7, "bench", "s", "t7", columns, (),
                             {"ttl": "1d"}, (), 3)  # fmt: skip

    def alter(n: int) -> object:
        bumped = copy(info, options={"ttl": f"{n}d"}, version=info.version + 1)
        event = f[Event](
            "e", "bench", n, 1, n, "c", "bench", _WHEN,
            (f[TableVersion](7, 4),),
            f[TableAltered]("TableAltered", 7, (), (), {"ttl": f"{n}d"}, ()),
            (f[KeyAtVersion]("KeyAtVersion", "__table_info/7", 3),),
            (f[Mutation]("__table_info/7", MutationOp.PUT, bumped),),
            b"", b"", None,
        )  # fmt: skip
        return _read_models(event)

    return alter


def plain_tuple() -> Callable[[int], object]:
    """One alter's records as plain tuples, read by index (no names at all)."""
    columns = tuple(_COLUMNS)
    info = ("TableInfoValue", 7, "bench", "s", "t7", columns, (), {"ttl": "1d"}, (), 3)

    def alter(n: int) -> object:
        bumped = (*info[:7], {"ttl": f"{n}d"}, info[8], info[9] + 1)
        event = (
            "e", "bench", n, 1, n, "c", "bench", _WHEN, ((7, 4),),
            ("TableAltered", 7, (), (), {"ttl": f"{n}d"}, ()),
            (("KeyAtVersion", "__table_info/7", 3),),
            (("__table_info/7", MutationOp.PUT, bumped),), b"", b"", None,
        )  # fmt: skip
        count = len(event) + len(event[8][0]) + len(event[9]) + len(event[10][0])
        mutation = event[11][0]
        count += len(mutation) + len(mutation[2])
        return count + sum(len(c) for c in mutation[2][5])

    return alter


def forms() -> dict[str, Callable[[int], object]]:
    """Every form that can run here, by name."""
    found = {
        "pydantic validated": pydantic_form(True),
        "pydantic trusted": pydantic_form(False),
        "named tuple": tuple_form("named"),
        "tuple": plain_tuple(),
    }
    with contextlib.suppress(ImportError):  # not a dependency: compared when installed
        found["msgspec.Struct"] = tuple_form("msgspec")
    return found


def main() -> None:
    """Print µs of CPU per alter of each form."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alters", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    runs = forms()
    counts = {name: run(1) for name, run in runs.items()}
    assert len(set(counts.values())) == 1, counts  # every form reads as many fields
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.rounds):
        for name, run in runs.items():
            started = time.process_time()
            for n in range(args.alters):
                run(n)
            best[name] = min(best[name], time.process_time() - started)
    for name, seconds in best.items():
        print(f"{name:20} {seconds / args.alters * 1e6:7.2f} µs CPU per alter")


if __name__ == "__main__":
    main()
