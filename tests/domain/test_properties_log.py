"""Properties of the log the pure core writes (issue 15, item 6).

Random command sequences (valid and hostile steps, `tests.domain.steps`) in
both publish modes, driven through `decide` then `apply`; after every step:
resource_versions are dense and the chain holds; a (table_id, version) pair
never repeats and each table id's versions are dense but where it takes a name
(DESIGN.md, "Publication order": an id that changes role keeps counting its
versions); a (name, version) pair never denotes two different states (DESIGN.md,
"Versions never repeat for a name either"); replaying the
encoded and decoded log from an empty image rebuilds the image, also when it is
decoded as a replay decodes it (values packed).
"""

from hypothesis import given
from hypothesis import strategies as st

from events.chain import verify_chain
from events.codec import decode_event, encode_event
from events.event import Event
from events.keys import TABLE_NAME
from events.values import TableInfoValue, TableNameValue
from projector.fold.apply import apply, replay
from projector.fold.image import Image
from projector.replay.source import packed_decoder
from tests.domain.builders import CATALOG
from tests.domain.runs import PROPERTIES, Run
from tests.domain.steps import MIXED, MODES, Step, plans, role_steps, valid_steps


@PROPERTIES
@given(mode=MODES, steps=MIXED)
def test_resource_versions_are_dense_from_one_and_the_hash_chain_holds(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    for step, _, outcome in run.play(steps):
        if isinstance(outcome, Event):
            assert outcome.resource_version == len(run.log), step
            assert outcome.prev_hash == run.log[-2].hash, step
    assert [e.resource_version for e in run.log] == list(range(1, len(run.log) + 1))
    verify_chain(run.log)


@PROPERTIES
@given(mode=MODES, steps=plans(role_steps))
def test_a_table_id_and_version_pair_never_repeats_and_each_ids_versions_are_dense(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    last: dict[int, int] = {}
    names: dict[str, int] = {}  # name key -> the id it points to
    for step, _, outcome in run.play(steps):
        if isinstance(outcome, Event):
            taking = set()
            for m in outcome.mutations:
                if isinstance(m.value, TableNameValue) and names.get(m.key) != m.value.table_id:
                    taking.add(m.value.table_id)
            for table in outcome.tables:
                was = last.get(table.table_id, 0)
                # An id that takes a name goes on from the name's versions if they are higher.
                dense = table.version == was + 1
                assert dense or (table.table_id in taking and table.version > was), (
                    f"{step!r}: table id {table.table_id} goes to version {table.version} "
                    f"after version {was}"
                    + (": the pair repeats" if table.version <= was else ": versions skip")
                )
                last[table.table_id] = table.version
            for m in outcome.mutations:
                if m.key.startswith(TABLE_NAME + "/"):
                    if isinstance(m.value, TableNameValue):
                        names[m.key] = m.value.table_id
                    else:
                        names.pop(m.key, None)


@PROPERTIES
@given(mode=MODES, steps=plans(role_steps))
def test_a_name_and_version_pair_never_denotes_two_different_states(
    mode: str, steps: list[Step]
) -> None:
    # Every table info the log writes (live, or dropped under `__removed-`) is a state a
    # client may read as (schema, table, version); a write conditioned on that pair must
    # never match another state (issue 50: exchange, truncate, drop + create, rename onto,
    # recover under a name another table used meanwhile).
    run = Run(mode)
    states: dict[tuple[str, str, int], TableInfoValue] = {}
    for step, _, outcome in run.play(steps):
        if not isinstance(outcome, Event):
            continue
        for m in outcome.mutations:
            info = m.value
            if isinstance(info, TableInfoValue):
                pair = (info.schema_name, info.table_name, info.version)
                seen = states.setdefault(pair, info)
                assert seen == info, (
                    f"{step!r}: `{pair[0]}.{pair[1]}` at version {pair[2]} was table id "
                    f"{seen.table_id} and is now table id {info.table_id}"
                    + (" in another state" if seen.table_id == info.table_id else "")
                )


@PROPERTIES
# Half hostile, half valid plans long enough to publish and release (pending and
# published views must replay too).
@given(mode=MODES, steps=st.one_of(MIXED, plans(valid_steps, min_size=12)))
def test_replaying_the_decoded_log_from_empty_equals_the_image_after_every_step(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    decoded: list[Event] = []
    replayed = Image.empty(CATALOG)
    for step, _, _ in run.play(steps):
        for event in run.log[len(decoded) :]:
            decoded.append(decode_event(encode_event(event)))
            replayed = apply(replayed, decoded[-1])
        assert replayed == run.image, step
    assert replay(Image.empty(CATALOG), decoded) == run.image
    # A replay reads its events packed (named tuples, not models); its pending changes
    # are the logged events all the same.
    packed = list(map(packed_decoder(), map(encode_event, run.log)))
    assert replay(Image.empty(CATALOG), packed) == run.image
