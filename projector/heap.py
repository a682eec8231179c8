"""The process heap: the cycle collector paused while a large acyclic state is built.

An image is hundreds of thousands of acyclic objects (maps, tuples, models).
With the collector on, each generation-2 pass walks the whole heap, and bulk
allocation triggers many: a snapshot write of 1M tables took 127 s with it on
and 31 s paused; a replay of 200,000 events runs at 15,000 to 18,000 events/s with it on
and 19,000 to 22,000 paused (BENCHMARKS.md). The pause is process-wide but bounded by
the work. Whether an image is then kept out of later passes is the follower's
`freeze_gc`.
"""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector is on again after it if it was.

    Also a decorator (`@collector_paused()`): the function's every call is the block.

    What the block built is then moved to the oldest generation at once
    (`gc.freeze` and `gc.unfreeze`: two list splices), so the next young
    collection does not walk it all (0.6 s after a replay of 100k tables). That
    is skipped when the process keeps frozen objects of its own (a follower with
    `freeze_gc`, the leader): unfreezing would hand them back to the collector.
    """
    enabled = gc.isenabled()
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if frozen == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
