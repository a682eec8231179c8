"""The columnar snapshot layout (format 4): exact round trip, structure checks, old formats."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from events.changes import Mutation, MutationOp
from events.commands import AdvanceStableEpoch, DropTable, ExchangePartition, Publish, RenameTable
from events.event import Event
from events.values import LabelRuleValue, PartitionDef, TableInfoValue, TableVersion
from producers.decide.core import decide
from producers.leader.local import LocalCatalog
from projector.errors import SnapshotError
from projector.fold.apply import apply, replay
from projector.fold.draft import mutated
from projector.fold.image import Image
from projector.fold.view import View
from projector.snapshot.columns import image_batches
from projector.snapshot.layout import CHUNK, FORMAT, INFO, SCHEMA
from projector.snapshot.store import Position, load_newest, read_snapshot, write_snapshot
from tests.domain.builders import command, create, local, stamps
from tests.follower.workload import CATALOG, explicit_log, random_log

POSITION = Position("t.events", 0, 42)


def _same_view(loaded: View, replayed: View) -> None:
    """Equal keys and values, equal indexes, and each value of the same type and fields."""
    assert loaded == replayed
    assert loaded.rules == replayed.rules
    datanodes = {int(k.split("/")[1]) for k in replayed.values if k.startswith("__dn_table/")}
    for datanode in [*datanodes, max(datanodes, default=0) + 1]:
        assert loaded.datanode_table_ids(datanode) == replayed.datanode_table_ids(datanode)
        assert loaded.datanode_tables(datanode) == replayed.datanode_tables(datanode)
    for key, value in replayed.values.items():
        got = loaded.values[key]
        assert type(got) is type(value), key
        if isinstance(value, TableInfoValue | LabelRuleValue):
            assert got.model_dump() == value.model_dump(), key


@pytest.mark.parametrize(
    ("make", "rich"),
    [(lambda: _with_a_dropped_table(random_log(120, seed=5)), True), (explicit_log, False)],
)
def test_the_columnar_round_trip_equals_full_replay_value_by_value(
    tmp_path: Path, make: object, rich: bool
) -> None:
    catalog = make()  # type: ignore[operator]
    replayed = replay(Image.empty(CATALOG), catalog.events)
    image, position = read_snapshot(write_snapshot(tmp_path, catalog.image, POSITION))
    assert image == replayed and position == POSITION
    _same_view(image.head, replayed.head)
    _same_view(image.published, replayed.published)
    assert (image.published is image.head) == (replayed.published is replayed.head)
    assert image.pending == replayed.pending and image.pending_by_table == replayed.pending_by_table
    if rich:  # the random workload covers options, label rules and dropped tables
        infos = [v for v in image.head.values.values() if isinstance(v, TableInfoValue)]
        assert any(v.options for v in infos) and image.head.rules
        assert any(k.startswith("__removed-") for k in image.head.values)


def test_tables_with_partitions_defaults_and_many_chunks_round_trip(tmp_path: Path) -> None:
    catalog = random_log(10, seed=8)
    view = catalog.image.head
    info = next(v for v in view.values.values() if isinstance(v, TableInfoValue))
    columns = tuple(
        c.model_copy(update={"default_value": f"d{i}"}) for i, c in enumerate(info.columns)
    )
    parts = (PartitionDef(partition_id=9001, name="p0"), PartitionDef(partition_id=9002, name="p1"))
    bulk = {f"__table_info/{900_000 + n}": info.model_copy(update={
        "table_id": 900_000 + n, "columns": columns, "partitions": parts,
    }) for n in range(CHUNK + 5)}  # fmt: skip
    head = mutated(view, [])
    for key, value in bulk.items():
        head = mutated(head, [_put(key, value)])
    image = Image(catalog=CATALOG, head=head, published=head, resource_version=7)
    batches = list(image_batches(image))
    assert sum(b.num_rows for b in batches if b.column("kind")[0].as_py() == INFO) > CHUNK
    loaded, _ = read_snapshot(write_snapshot(tmp_path, image, POSITION))
    _same_view(loaded.head, head)


@pytest.mark.parametrize("mode", ["auto", "explicit"])
def test_a_loaded_snapshot_keeps_retired_and_name_versions_and_pending_keys_for_the_log_after_it(
    tmp_path: Path, mode: str
) -> None:
    catalog = local(mode)
    catalog.submit(create("parts", partitions=("p0",)))
    catalog.submit(create("plain"))
    exchange = command(
        ExchangePartition,
        table_name="parts",
        partition_name="p0",
        other_schema_name="public",
        other_table_name="plain",
    )
    catalog.submit(exchange)  # `plain` leaves id 3 (at version 2) for p0's id 2, at 3
    assert dict(catalog.image.retired_versions) == {3: 2}
    assert dict(catalog.image.name_versions) == {("public", "plain"): 2}
    assert bool(catalog.image.pending_by_key) == (mode == "explicit")
    loaded, _ = read_snapshot(write_snapshot(tmp_path, catalog.image, POSITION))
    assert loaded == replay(Image.empty(CATALOG), catalog.events)
    done = len(catalog.events)
    catalog.submit(exchange.model_copy(update={"command_id": "back"}))  # `plain` is 3 again
    info = catalog.image.head.table(3)  # above the 4 id 2 leaves the name at
    assert info is not None and info.version == 5
    if mode == "explicit":
        # `parts`' create takes 1, its exchanges wait for `plain`'s create; `plain` takes the rest.
        for table_id in (1, 3):
            catalog.submit(command(Publish, table_id=table_id, epoch=1))
        catalog.submit(command(AdvanceStableEpoch, epoch=1))
        assert not catalog.image.pending
    assert replay(loaded, catalog.events[done:]) == catalog.image


def test_a_loaded_snapshot_remembers_a_freed_names_version_for_the_table_taking_it_later(
    tmp_path: Path,
) -> None:
    catalog = local()
    catalog.submit(create("a"))
    catalog.submit(command(RenameTable, table_name="a", new_table_name="x"))  # `a` left at 2
    loaded, _ = read_snapshot(write_snapshot(tmp_path, catalog.image, POSITION))
    assert dict(loaded.name_versions) == {("public", "a"): 2}
    # A leader restarted from the snapshot decides as the one that never stopped.
    event = decide(loaded, create("a"), stamps()())
    assert isinstance(event, Event) and event.tables == (TableVersion(table_id=2, version=3),)
    assert apply(loaded, event) == apply(catalog.image, event)


def test_a_format_3_snapshot_loads_with_the_names_its_dropped_tables_left(tmp_path: Path) -> None:
    catalog = local()
    for name in ("a", "b"):
        catalog.submit(create(name))
    catalog.submit(command(DropTable, table_name="a"))  # `a` left at 2
    path = write_snapshot(tmp_path, catalog.image, POSITION)
    _rewrite_meta(path, lambda meta: {**meta, "format": 3, "name_versions": None})
    loaded, _ = read_snapshot(path)
    assert dict(loaded.name_versions) == {("public", "a"): 2}
    assert loaded == catalog.image


def _rewrite_meta(path: Path, change: Callable[[dict[str, object]], dict[str, object]]) -> None:
    """Rewrite the snapshot's metadata (what an older metalog wrote); row groups as they were."""
    source = pq.ParquetFile(path)
    metadata = source.schema_arrow.metadata
    meta = change(json.loads(metadata[b"metalog.snapshot"]))
    schema = source.schema_arrow.with_metadata({b"metalog.snapshot": json.dumps(meta).encode()})
    with pq.ParquetWriter(path.with_suffix(".tmp"), schema) as writer:
        for group in range(source.num_row_groups):
            writer.write_table(source.read_row_group(group).cast(schema))
    _rewrite(path, pq.read_table(path.with_suffix(".tmp")), row_group_size=None)


def _with_a_dropped_table(catalog: LocalCatalog) -> LocalCatalog:
    name = next(k for k in catalog.image.head.values if k.startswith("__table_name/"))
    schema, table = name.split("/")[-2:]
    catalog.submit(command(DropTable, schema_name=schema, table_name=table))
    return catalog


def _put(key: str, value: TableInfoValue) -> Mutation:
    return Mutation(key=key, op=MutationOp.PUT, value=value)


def _rewrite(path: Path, table: pa.Table, row_group_size: int | None = 1 << 20) -> None:
    """Replace a snapshot's contents and give it a matching checksum (a well-formed file).

    `row_group_size=None` keeps a file written elsewhere (`path.with_suffix(".tmp")`) as is.
    """
    if row_group_size is None:
        path.with_suffix(".tmp").replace(path)
    else:
        pq.write_table(table, path, row_group_size=row_group_size)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_suffix(".sha256").write_text(f"{digest}  {path.name}\n")


def test_an_old_format_snapshot_is_skipped_with_a_warning_not_misread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = random_log(20, seed=1)
    older = write_snapshot(tmp_path, catalog.image, POSITION)
    newer = older.with_name(f"{catalog.image.resource_version + 1:020d}.parquet")
    meta = {"format": 1, "catalog": CATALOG}  # what format 1 held: rows of JSON values
    old = pa.table({"section": ["head"], "key": ["k"], "value": [b"{}"], "epoch": [None]})
    _rewrite(newer, old.replace_schema_metadata({b"metalog.snapshot": json.dumps(meta)}))
    with pytest.raises(SnapshotError, match=f"format 1 is not {FORMAT}"):
        read_snapshot(newer)
    with caplog.at_level(logging.WARNING, logger="projector.snapshot.store"):
        found = load_newest(tmp_path, CATALOG)
    assert found is not None and found[1] == POSITION and found[0] == catalog.image
    assert any("format 1" in r.getMessage() for r in caplog.records)
    older.unlink()
    assert load_newest(tmp_path, CATALOG) is None


def _break_infos(path: Path, column: str, broken: Callable[[pa.Array], pa.Array]) -> None:
    """Rewrite the snapshot with `column` of its info rows replaced; row groups as they were."""
    source = pq.ParquetFile(path)
    groups = [source.read_row_group(g) for g in range(source.num_row_groups)]
    index = SCHEMA.get_field_index(column)
    with pq.ParquetWriter(path.with_suffix(".tmp"), source.schema_arrow) as writer:
        for group in groups:
            if group.column("kind")[0].as_py() == INFO:
                array = broken(group.column(column).combine_chunks())
                group = group.set_column(index, SCHEMA.field(column), array)
            writer.write_table(group)
    _rewrite(path, pq.read_table(path.with_suffix(".tmp")), row_group_size=None)


@pytest.mark.parametrize(
    ("column", "broken", "message"),
    [
        ("columns", lambda a: pa.array([[10_000]] * len(a), a.type), "column index"),
        ("table_id", lambda a: pa.nulls(len(a), a.type), "null"),
    ],
)
def test_a_snapshot_that_breaks_the_layout_is_refused_even_with_a_good_checksum(
    tmp_path: Path, column: str, broken: Callable[[pa.Array], pa.Array], message: str
) -> None:
    path = write_snapshot(tmp_path, random_log(20, seed=4).image, POSITION)
    _break_infos(path, column, broken)
    with pytest.raises(SnapshotError, match=message):
        read_snapshot(path)


def test_a_row_group_mixing_kinds_is_refused(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, random_log(20, seed=4).image, POSITION)
    _rewrite(path, pq.read_table(path))  # one row group of every kind
    with pytest.raises(SnapshotError, match=r"does not hold one \(section, kind\)"):
        read_snapshot(path)
