"""What a snapshot load needs of Arrow, at less than its defaults cost on a takeover's clock.

pyarrow imports pandas (0.35 s on a quiet machine, twice that on a busy one)
the first time an array or a scalar is built from Python values or an array
goes `to_numpy`: in a cold leader, on its takeover's clock, inside the
snapshot load. What the load needs is read from the arrays' buffers instead.

Arrow's default allocator, mimalloc, asks the kernel for transparent huge
pages for its arenas: faulting in the 0.5 GB a 1M-table load decodes cost
1.2-1.5 s of system time on the benchmark machine, against 0.25-0.33 s from
the system allocator (docs/benchmarks/failover.md). The load decodes with
the latter (`system_allocator`).
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa

_DTYPES = {pa.int8(): np.int8, pa.int32(): np.int32, pa.int64(): np.int64}


def numpy_of(array: pa.Array) -> np.ndarray:
    """An integer array's values (no nulls), without a copy."""
    dtype = np.dtype(_DTYPES[array.type])
    return np.frombuffer(
        array.buffers()[1], dtype, count=len(array), offset=array.offset * dtype.itemsize
    )


def offsets_of(array: pa.Array) -> np.ndarray:
    """A string array's `len + 1` offsets into its data buffer, without a copy."""
    offset = array.offset * 4
    return np.frombuffer(array.buffers()[1], np.int32, count=len(array) + 1, offset=offset)


def string_scalar(text: str) -> pa.Scalar:
    """`pa.scalar(text)`, built from its bytes."""
    data = text.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.StringArray.from_buffers(1, offsets, pa.py_buffer(data))[0]


def int_scalar(value: int) -> pa.Scalar:
    """`pa.scalar(value, pa.int64())`, built from its bytes."""
    return pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(struct.pack("<q", value))])[0]


_pool_lock = threading.Lock()
_pool_users = 0
_pool_before: pa.MemoryPool | None = None


@contextmanager
def system_allocator() -> Iterator[None]:
    """Arrow allocates from the system allocator (malloc) inside (the whole process does).

    Each buffer is freed to the pool it came from, so arrays made inside live
    on after it; the default pool is restored when the last user leaves.
    """
    global _pool_users, _pool_before
    with _pool_lock:
        if _pool_users == 0:
            _pool_before = pa.default_memory_pool()
            pa.set_memory_pool(pa.system_memory_pool())
        _pool_users += 1
    try:
        yield
    finally:
        with _pool_lock:
            _pool_users -= 1
            if _pool_users == 0 and _pool_before is not None:
                pa.set_memory_pool(_pool_before)
                _pool_before = None
