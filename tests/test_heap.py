"""`collector_paused`: no collection inside; what it built is promoted; frozen objects stay."""

import gc

from projector.heap import collector_paused


def _built() -> list[list[int]]:
    return [[i] for i in range(50_000)]  # 50,001 tracked containers


def test_what_the_block_built_goes_to_the_oldest_generation_at_once() -> None:
    gc.unfreeze()  # a process that keeps no frozen objects of its own
    gc.collect()
    with collector_paused():
        assert not gc.isenabled()
        kept = _built()
        assert gc.get_count()[0] > gc.get_threshold()[0]  # a young pass would be due
    assert gc.isenabled()
    # In the oldest generation at once: no young pass walked it on its way there.
    assert any(o is kept for o in gc.get_objects(generation=2))
    assert not any(o is kept for o in gc.get_objects(generation=1))


def test_objects_the_process_froze_stay_frozen() -> None:
    gc.collect()
    mine = _built()
    gc.freeze()
    try:
        with collector_paused():
            kept = _built()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        # Still out of every generation the collector walks: nothing was handed back.
        assert not any(o is mine for o in gc.get_objects())
        assert any(o is kept for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            _built()
        assert not gc.isenabled()
    finally:
        gc.enable()
