"""Property tests of decide + apply over random command sequences, in both publish modes."""

import contextlib
import tempfile
from collections.abc import Callable
from functools import reduce
from itertools import chain
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.codec import decode_event, encode_event
from events.commands import (
    AddPartition,
    AdvanceStableEpoch,
    AlterTable,
    Command,
    DropPartition,
    DropTable,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    Reload,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    TruncatePartition,
    TruncateTable,
)
from events.event import Event
from events.intents import EpochAssigned
from events.values import Column
from producers.errors import CommandRejected
from producers.leader.local import LocalCatalog
from projector.fold.apply import apply, replay
from projector.fold.draft import mutated
from projector.fold.image import Image
from projector.fold.layered import WrittenValues
from projector.fold.view import View
from projector.snapshot.store import Position, read_snapshot, write_snapshot
from tests.domain.builders import CATALOG, command, create, local

NAMES = ("a", "b", "c", "d")
PARTS = ("p0", "p1", "p2")

Step = tuple[int, int, int, int, int]
steps = st.lists(
    st.tuples(
        st.integers(0, 17),
        st.integers(0, 2),
        st.integers(0, 2),
        st.integers(1, 3),
        st.integers(0, 2),
    ),
    min_size=5,
    max_size=35,
)


def _command(image: Image, step: Step) -> Command:
    kind, n, p, d, k = step
    name, part, other = NAMES[n], PARTS[p], NAMES[(n + 1) % 3]
    table_id = _pick(list(image.head.datanode_table_ids(1)), n + k)
    kinds: dict[int, Callable[[], Command]] = {
        0: lambda: create(name, partitions=PARTS[: k + 1] if d > 1 else (), datanodes=(1, d)),
        1: lambda: command(DropTable, table_name=name),
        2: lambda: command(RecoverTable, table_name=name),
        3: lambda: command(
            PurgeTable, table_id=_pick([t.table_id for t in image.head.dropped_tables()], k)
        ),
        4: lambda: command(RenameTable, table_name=name, new_table_name=NAMES[(n + 1 + k % 2) % 4]),
        5: lambda: command(
            AlterTable, table_name=name, add_columns=(Column(name=f"c{d}{k}", data_type="int"),)
        ),
        6: lambda: command(TruncateTable, table_name=name),
        7: lambda: command(AddPartition, table_name=name, partition_name=part),
        8: lambda: command(DropPartition, table_name=name, partition_name=part),
        9: lambda: command(TruncatePartition, table_name=name, partition_name=part),
        10: lambda: command(
            ExchangePartition,
            table_name=name,
            partition_name=part,
            other_schema_name="public",
            other_table_name=other,
        ),
        11: lambda: _failover(image, table_id, d),
        12: lambda: command(SetAttributes, table_name=name, attributes=f"k{k}=v{d}"),
        13: lambda: command(
            SetAttributes, table_name=name, partition_name=part, attributes=f"k{d}=w{k}"
        ),
        14: lambda: command(ResetAttributes, table_name=name, partition_name=part if k else None),
        15: lambda: command(Reload),
        16: lambda: command(
            Publish, table_id=_pick(sorted(image.pending_by_table), n), epoch=image.stable_epoch + k
        ),
        17: lambda: command(AdvanceStableEpoch, epoch=image.stable_epoch + k),
    }
    return kinds[kind]()


def _pick(ids: list[int], index: int) -> int:
    return ids[index % len(ids)] if ids else 1


def _failover(image: Image, table_id: int, to: int) -> Command:
    route = image.head.route(table_id)
    if route is None:
        return command(Reload)
    return command(
        FailoverRegion,
        table_id=table_id,
        region_id=route.region_routes[0].region_id,
        to_datanode=to,
        expected_route=route,
    )


def _run(mode: str, plan: list[Step]) -> LocalCatalog:
    catalog = local(mode)
    # Start from three tables so most commands find something to change.
    catalog.submit(create("a", partitions=("p0", "p1"), regions=2, datanodes=(1, 2)))
    catalog.submit(create("b", datanodes=(1,)))
    catalog.submit(create("c", datanodes=(1, 3), regions=2))
    for step in plan:
        with contextlib.suppress(CommandRejected):
            catalog.submit(_command(catalog.image, step))
    return catalog


def _published_by_definition(events: tuple[Event, ...], stable: int) -> View:
    """Fold the changes with 0 < epoch <= stable in (epoch, rv) order, from scratch."""
    epochs = {e.resource_version: e.schema_epoch for e in events if e.is_change}
    for e in events:
        if isinstance(e.intent, EpochAssigned):
            epochs.update(dict.fromkeys(e.intent.resource_versions, e.intent.epoch))
    changes = sorted(
        (e for e in events if e.is_change and 0 < epochs[e.resource_version] <= stable),
        key=lambda e: (epochs[e.resource_version], e.resource_version),
    )
    return mutated(View(CATALOG), chain.from_iterable(e.mutations for e in changes))


common = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(mode=st.sampled_from(["auto", "explicit"]), plan=steps, cut=st.integers(0, 40))
def test_replay_rebuilds_the_leaders_image_and_a_snapshot_plus_tail_equals_the_full_replay(
    mode: str, plan: list[Step], cut: int
) -> None:
    catalog = _run(mode, plan)
    events = catalog.events
    full = replay(Image.empty(CATALOG), events)
    assert full == catalog.image
    assert full.head == catalog.image.head and full.published == catalog.image.published
    prefix = replay(Image.empty(CATALOG), events[:cut])
    assert replay(prefix, events[cut:]) == full
    assert [e.resource_version for e in events] == list(range(1, len(events) + 1))


@common
@given(mode=st.sampled_from(["auto", "explicit"]), plan=steps, cut=st.integers(0, 40))
def test_a_loaded_snapshot_plus_the_tail_equals_the_full_replay_and_writes_back_whole(
    mode: str, plan: list[Step], cut: int
) -> None:
    events = _run(mode, plan).events
    full = replay(Image.empty(CATALOG), events)
    with tempfile.TemporaryDirectory() as folder:
        prefix = replay(Image.empty(CATALOG), events[:cut])
        cold, _ = read_snapshot(write_snapshot(Path(folder), prefix, Position("t", 0, cut)))
        assert cold == prefix and cold.head.values.cold is not None
        # The tail applies over the cold layer: lookups, tombstones, datanode index.
        tail = replay(cold, events[cut:])
        assert tail == full
        for view, replayed in ((tail.head, full.head), (tail.published, full.published)):
            _same_view(view, replayed)
        # A loaded-then-changed image writes every key, touched or not.
        again, _ = read_snapshot(write_snapshot(Path(folder), tail, Position("t", 0, 99)))
        assert again == full
        _same_view(again.head, full.head)


@common
@given(mode=st.sampled_from(["auto", "explicit"]), plan=steps, cut=st.integers(0, 40))
def test_replay_builds_the_image_that_applying_event_by_event_builds_down_to_its_maps(
    mode: str, plan: list[Step], cut: int
) -> None:
    # `replay` writes a run of changes to one draft of the head; `apply` makes a view each.
    events = _run(mode, plan).events
    with tempfile.TemporaryDirectory() as folder:
        prefix = replay(Image.empty(CATALOG), events[:cut])
        cold, _ = read_snapshot(write_snapshot(Path(folder), prefix, Position("t", 0, cut)))
        for start, tail in ((Image.empty(CATALOG), events), (prefix, events[cut:]),
                            (cold, events[cut:])):  # fmt: skip
            stepwise = reduce(apply, tail, start)
            replayed = replay(start, tail)
            assert replayed == stepwise
            # The replay's read (`LogReader`): the log's bytes decoded straight into models.
            direct = replay(start, [_decoded(e) for e in tail])
            assert direct == stepwise
            _same_view(direct.head, stepwise.head)
            _same_view(direct.published, stepwise.published)
            assert (replayed.published is replayed.head) == (stepwise.published is stepwise.head)
            for view, expected in ((replayed.head, stepwise.head),
                                   (replayed.published, stepwise.published)):  # fmt: skip
                _same_view(view, expected)
                if start.resource_version == 0 and view.values.cold is not expected.values.cold:
                    # From nothing, the first run's writes became a cold layer: their dict.
                    assert expected.values.cold is None
                    assert isinstance(view.values.cold, WrittenValues)
                    continue
                # The same layers: tombstones, the datanode index of the changed keys.
                assert view.values.cold is expected.values.cold
                assert view.values.changes == expected.values.changes
                assert view.changed_datanodes == expected.changed_datanodes


def _takes_a_name(before: Image, event: Event, table_id: int) -> bool:
    """Whether the event points a name that pointed elsewhere (or nowhere) to the table."""
    for m in event.mutations:
        if m.key.startswith("__table_name/") and getattr(m.value, "table_id", None) == table_id:
            schema_name, table_name = m.key.split("/")[-2:]
            if before.head.table_id(schema_name, table_name) != table_id:
                return True
    return False


def _decoded(event: Event) -> Event:
    return decode_event(encode_event(event))


def _same_view(view: View, replayed: View) -> None:
    """Same keys, values, count and indexes as the replayed view, through every accessor."""
    assert len(view) == len(replayed) and sorted(view.values) == sorted(replayed.values)
    assert dict(view.values.items()) == dict(replayed.values.items())
    for key in replayed.values:
        assert key in view and view.get(key) == replayed.get(key), key
    for datanode in (1, 2, 3, 4):
        assert view.datanode_table_ids(datanode) == replayed.datanode_table_ids(datanode)
        assert view.datanode_tables(datanode) == replayed.datanode_tables(datanode)
    assert view.rules == replayed.rules
    dropped = sorted(t.table_id for t in replayed.dropped_tables())
    assert sorted(t.table_id for t in view.dropped_tables()) == dropped


@common
@given(mode=st.sampled_from(["auto", "explicit"]), plan=steps)
def test_table_versions_are_dense_and_followers_never_see_above_the_stable_epoch(
    mode: str, plan: list[Step]
) -> None:
    catalog = _run(mode, plan)
    image = Image.empty(CATALOG)
    for event in catalog.events:
        before = image
        image = apply(image, event)
        for table in event.tables:
            was = before.version_of(table.table_id)  # counts on across roles
            if not _takes_a_name(before, event, table.table_id):
                assert table.version == was + 1
            else:  # and from the name's versions if they are higher (issue 50)
                assert table.version > was
            info = image.head.table(table.table_id) or image.head.dropped_table(table.table_id)
            assert info is None or info.version == table.version
        assert all(
            c.schema_epoch == 0 or c.schema_epoch > image.stable_epoch
            for c in image.pending.values()
        )
        assert image.published == _published_by_definition(
            catalog.events[: event.resource_version], image.stable_epoch
        )
        if image.publish_mode == "auto":
            assert image.published is image.head
