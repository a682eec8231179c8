"""Arrow values to and from numpy and Python without pyarrow's pandas shim.

pyarrow imports pandas (0.35 s on a quiet machine, twice that on a busy one)
the first time an array or a scalar is built from Python values or an array
goes `to_numpy`: in a cold leader, on its takeover's clock, inside the
snapshot load. What the load needs is read from the arrays' buffers instead.
"""

from __future__ import annotations

import struct

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
