"""A loaded view's cold layer (`projector.snapshot.cold`) under its changes (`fold.layered`)."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pyarrow as pa
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from events.changes import Mutation, MutationOp
from events.checkpoint import Signer
from events.intents import CHANGE_INTENTS, CheckpointSigned, LeaderElected
from events.values import TableInfoValue, TableNameValue
from producers.leader.local import CheckpointSchedule, LocalCatalog
from projector.errors import SnapshotError
from projector.fold.apply import apply, replay
from projector.fold.draft import mutated
from projector.fold.image import Image
from projector.fold.layered import GONE, LayeredValues, WrittenValues
from projector.fold.packing import PackedName
from projector.fold.view import View
from projector.snapshot.cold import ColdValues
from projector.snapshot.layout import DATANODE_TABLE, NAME
from projector.snapshot.store import Position, read_snapshot, write_snapshot
from tests.domain.builders import stamps
from tests.follower.workload import CATALOG, random_log

POSITION = Position("t.events", 0, 7)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Image, Image]:
    """(The image a snapshot loads into, the replayed image it was written from)."""
    image = replay(Image.empty(CATALOG), random_log(60, seed=3).events)
    folder = tmp_path_factory.mktemp("snapshots")
    return read_snapshot(write_snapshot(folder, image, POSITION))[0], image


def test_a_loaded_view_builds_values_on_read_and_a_lookup_equals_the_scan(
    loaded: tuple[Image, Image],
) -> None:
    image, replayed = loaded
    values = image.head.values
    cold = values.cold
    assert cold is not None and len(values.changes) == 0 and len(cold) == len(replayed.head)
    scanned = dict(cold.items())
    assert scanned.keys() == set(replayed.head.values)
    for key, packed in scanned.items():
        alone = cold.get(key)
        assert alone == packed == replayed.head.values[key] and type(alone) is type(packed), key
    assert cold.get("__table_info/999999") is None and "__table_info/999999" not in cold


def test_deleting_a_cold_key_leaves_a_tombstone_and_a_put_brings_it_back(
    loaded: tuple[Image, Image],
) -> None:
    head = loaded[0].head
    key = next(k for k in head.values if k.startswith("__table_name/"))
    before = head.values[key]
    gone = mutated(head, [Mutation(key=key, op=MutationOp.DELETE)])
    assert gone.values.changes[key] is GONE
    assert key not in gone and gone.get(key) is None and key not in set(gone.values)
    assert len(gone) == len(head) - 1 and key not in dict(gone.values.items())
    assert head.values[key] == before  # the loaded view never changes
    back = mutated(gone, [Mutation(key=key, op=MutationOp.PUT, value=TableNameValue(table_id=5))])
    assert back.values[key] == PackedName(5) and len(back) == len(head)
    again = mutated(gone, [Mutation(key=key, op=MutationOp.DELETE)])  # already gone: a no-op
    assert len(again) == len(gone) and again == gone


def test_a_key_only_the_changes_held_is_removed_outright(loaded: tuple[Image, Image]) -> None:
    head = loaded[0].head
    key = "__table_name/c/public/brand_new"
    put = mutated(head, [Mutation(key=key, op=MutationOp.PUT, value=TableNameValue(table_id=9))])
    assert len(put) == len(head) + 1 and put.get(key) == TableNameValue(table_id=9)
    dropped = mutated(put, [Mutation(key=key, op=MutationOp.DELETE)])
    assert key not in dropped.values.changes and len(dropped) == len(head)
    assert dropped == head


def test_views_are_equal_by_content_whatever_holds_the_values(
    loaded: tuple[Image, Image],
) -> None:
    image, replayed = loaded
    stepwise = reduce(apply, random_log(60, seed=3).events, Image.empty(CATALOG))
    assert image == replayed == stepwise and image.head == replayed.head == stepwise.head
    # A snapshot's columns, a replay's dict of writes, a HAMT built event by event.
    assert isinstance(image.head.values.cold, ColdValues)
    assert isinstance(replayed.head.values.cold, WrittenValues)
    assert stepwise.head.values.cold is None
    key = next(k for k in image.head.values if k.startswith("__table_info/"))
    info = image.head.values[key]
    assert isinstance(info, TableInfoValue)
    same = mutated(image.head, [Mutation(key=key, op=MutationOp.PUT, value=info)])
    assert key in same.values.changes and same == image.head == replayed.head
    bumped = info.model_copy(update={"version": info.version + 1})
    other = mutated(image.head, [Mutation(key=key, op=MutationOp.PUT, value=bumped)])
    assert other != image.head and other != replayed.head
    assert other == mutated(replayed.head, [Mutation(key=key, op=MutationOp.PUT, value=bumped)])


def test_the_datanode_index_joins_cold_keys_and_changes(loaded: tuple[Image, Image]) -> None:
    head = loaded[0].head
    ids = head.datanode_table_ids(1)
    assert ids and ids == loaded[1].head.datanode_table_ids(1)
    gone = mutated(head, [Mutation(key=f"__dn_table/1/{ids[0]}", op=MutationOp.DELETE)])
    assert gone.datanode_table_ids(1) == ids[1:]
    value = head.datanode_tables(1)[0].model_copy(update={"datanode_id": 7})
    moved = mutated(gone, [Mutation(key=f"__dn_table/7/{ids[0]}", op=MutationOp.PUT, value=value)])
    assert moved.datanode_table_ids(7) == (ids[0],) and moved.datanode_tables(7) == (value,)
    assert head.datanode_table_ids(7) == () and head.datanode_table_ids(1) == ids


def test_a_view_with_a_cold_layer_behind_an_empty_one_has_no_keys() -> None:
    empty = LayeredValues(ColdValues(()))
    assert len(empty) == 0 and empty == LayeredValues() and list(empty.items()) == []
    assert View(CATALOG, empty) == View(CATALOG)


def test_a_key_twice_in_one_view_is_refused() -> None:
    cold = ColdValues(())
    cold.add(NAME, pa.array(["k1", "k2"]), {"table_id": pa.array([1, 2], pa.int64())})
    cold.add(NAME, pa.array(["k3", "k1"]), {"table_id": pa.array([3, 4], pa.int64())})
    with pytest.raises(SnapshotError, match="appears twice"):
        cold.seal()


def test_a_datanode_key_that_does_not_name_its_row_is_refused() -> None:
    columns = {
        "datanode_id": pa.array([1, 2], pa.int64()),
        "table_id": pa.array([10, 11], pa.int64()),
        "version": pa.array([1, 1], pa.int64()),
        "regions": pa.array([[0], [0]], pa.list_(pa.int64())),
    }
    ColdValues(()).add(DATANODE_TABLE, pa.array(["__dn_table/1/10", "__dn_table/2/11"]), columns)
    with pytest.raises(SnapshotError, match="does not name its row"):
        ColdValues(()).add(
            DATANODE_TABLE, pa.array(["__dn_table/1/10", "__dn_table/1/11"]), columns
        )


def test_a_loaded_then_changed_image_writes_every_key(tmp_path: Path) -> None:
    catalog = random_log(60, seed=3)
    at = catalog.image.resource_version
    image, _ = read_snapshot(write_snapshot(tmp_path / "a", catalog.image, POSITION))
    random_log(30, seed=9, catalog=catalog)  # drops, renames, failovers of cold tables too
    changed = replay(image, catalog.events[at:])
    assert changed == catalog.image and changed.head.values.cold is image.head.values.cold
    changes = changed.head.values.changes
    assert GONE in changes.values()  # cold keys deleted, and others PUT over:
    assert any(v is not GONE and k in image.head for k, v in changes.items())
    written, _ = read_snapshot(write_snapshot(tmp_path / "b", changed, POSITION))
    assert written == catalog.image == replay(Image.empty(CATALOG), catalog.events)
    assert not written.head.values.changes and len(written.head) == len(catalog.image.head)


def test_a_replay_keeps_its_run_of_writes_across_checkpoints_and_elections() -> None:
    """A signed log has a checkpoint every N events: the replay applies each, and each
    election, within the run of changes around it, so the writes settle into one dict."""
    signing = LocalCatalog(CATALOG, stamps(), leader_id="node-1", checkpoints=CheckpointSchedule(
        Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32)))), events=4))  # fmt: skip
    signing.elect("node-1")
    random_log(30, seed=5, catalog=signing)
    signing.elect("node-2")
    events = random_log(30, seed=6, catalog=signing).events
    kinds = [type(event.intent) for event in events]
    amid = [at for at, kind in enumerate(kinds) if kind in (CheckpointSigned, LeaderElected)
            and kinds[at - 1] in CHANGE_INTENTS]  # fmt: skip
    assert len(amid) > 5 and LeaderElected in {kinds[at] for at in amid}
    replayed = replay(Image.empty(CATALOG), events)
    assert replayed == reduce(apply, events, Image.empty(CATALOG))
    assert replayed.leader_epoch == 2
    assert isinstance(replayed.head.values.cold, WrittenValues)
    assert len(replayed.head.values.changes) == 0  # one run: nothing built on top


def test_a_replays_dict_of_writes_reads_as_the_view_applied_event_by_event() -> None:
    events = random_log(60, seed=5).events
    replayed = replay(Image.empty(CATALOG), events).head
    stepwise = reduce(apply, events, Image.empty(CATALOG)).head
    cold = replayed.values.cold
    assert isinstance(cold, WrittenValues) and len(replayed.values.changes) == 0
    assert len(cold) == len(stepwise) and set(cold) == set(stepwise.values)
    for prefix in ("__table_info/", "__dn_table/", "__label_rule/"):
        assert dict(cold.items(prefix)) == dict(stepwise.values.scan(prefix)), prefix
    datanodes = {int(key.split("/")[1]) for key in cold if key.startswith("__dn_table/")}
    assert datanodes
    for datanode in (*datanodes, max(datanodes) + 1):
        assert cold.datanode_tables(datanode) == stepwise.datanode_entries(datanode)
        assert replayed.datanode_tables(datanode) == stepwise.datanode_tables(datanode)
