"""A loaded snapshot's keys → their row, found without a Python string per key.

A dict from key to row costs, at 1M tables (4M keys), a Python string per key
(`to_pylist`) and a hashed insert: ≈ 1.5 s, most of a snapshot load
(docs/benchmarks/failover.md). A `KeyIndex` hashes each row group's key
column in a few numpy passes over its bytes, then sorts the hashes, each with
its row number below it, in one int64 array. A lookup hashes the key alike,
goes to its bucket of that array, and compares the key itself with the row's
key (so a collision costs a comparison, never a wrong row).

The hash: a key's UTF-8 bytes, zero-padded to whole little-endian 64-bit
words, each word times its position's odd factor, summed with the length
times another (mod 2**64), then mixed (xor-shift, multiply, xor-shift).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence
from operator import mul

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from projector.errors import SnapshotError
from projector.snapshot.arrow import numpy_of, offsets_of

_MASK = (1 << 64) - 1
_MIX = 0x7FB5D329728EA185


def _splitmix(n: int) -> int:
    n = (n + 0x9E3779B97F4A7C15) & _MASK
    n = ((n ^ (n >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    n = ((n ^ (n >> 27)) * 0x94D049BB133111EB) & _MASK
    return n ^ (n >> 31)


_FACTORS = [_splitmix(n) | 1 for n in range(64)]
"""Each word position's factor; keys past 64 words (512 bytes) reuse them in turn."""
_LENGTH = _splitmix(64) | 1
_FACTOR_ARRAY = np.array(_FACTORS, np.uint64)
_UNPACK = [struct.Struct(f"<{words}Q").unpack for words in range(len(_FACTORS) + 1)]
_PADS = [bytes(size) for size in range(8)]
_PASS = 1 << 18
"""Entries per pass over the sorted array: each temporary stays under the 4 MiB from which
numpy asks the kernel for huge pages (whose faults cost 0.1 to 0.2 s more at 4M keys here)."""


def key_hash(key: str) -> int:
    """The 64-bit hash `KeyIndex` files `key` under (the same as the vectorised one)."""
    return _hash(key.encode())


def _hash(data: bytes) -> int:
    size = len(data)
    words = (size + 7) >> 3
    padded = data + _PADS[-size & 7]
    if words < len(_UNPACK):
        value, factors = _UNPACK[words](padded), _FACTORS
    else:
        value = struct.unpack(f"<{words}Q", padded)
        factors = _FACTORS * -(-words // len(_FACTORS))
    h = (sum(map(mul, value, factors)) + size * _LENGTH) & _MASK
    h = ((h ^ (h >> 31)) * _MIX) & _MASK
    return h ^ (h >> 29)


def key_hashes(keys: pa.Array) -> np.ndarray:
    """`key_hash` of every key of a string column (no nulls), as uint64."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.uint64)
    lengths = numpy_of(pc.binary_length(keys)).astype(np.uint64)
    width = max(8, (int(lengths.max()) + 7) & ~7)
    padded = pc.ascii_rpad(keys, width=width, padding="\0")
    offsets = offsets_of(padded)
    if offsets[0] != 0 or int(offsets[-1]) != n * width:  # not one width: hash each alone
        return np.fromiter(map(key_hash, keys.to_pylist()), np.uint64, n)
    words = np.frombuffer(padded.buffers()[2], "<u8", count=n * width >> 3).reshape(n, width >> 3)
    h = words @ np.resize(_FACTOR_ARRAY, width >> 3)  # wraps mod 2**64, as the sum does
    h += lengths * np.uint64(_LENGTH)
    h ^= h >> np.uint64(31)
    h *= np.uint64(_MIX)
    h ^= h >> np.uint64(29)
    return h


def _data(column: pa.Array) -> memoryview:
    """A string column's data buffer as unsigned bytes (pyarrow's are signed: 'b')."""
    data = column.buffers()[2]
    return memoryview(b"" if data is None else data).cast("B")


class KeyIndex:
    """Key → row over string columns taken in row order; read-only once built.

    Args:
        columns: Each row group's key column (no nulls); rows number on from
            one column to the next.

    Raises:
        SnapshotError: A key appears twice.
    """

    __slots__ = ("_bits", "_buckets", "_bytes", "_entries", "_shift", "_starts")

    def __init__(self, columns: Sequence[pa.Array]) -> None:
        self._starts = [0]
        for column in columns:
            self._starts.append(self._starts[-1] + len(column))
        self._bytes = [(offsets_of(c), _data(c)) for c in columns]
        """Each column's offsets and data: a row's key, compared without building a string."""
        rows = self._starts[-1]
        self._bits = bits = max(1, (rows - 1).bit_length())
        """Low bits of an entry: its row; the 63 - `bits` above them: its key's hash."""
        entries = np.empty(rows, np.int64)
        for hashed, start in zip(map(key_hashes, columns), self._starts, strict=False):
            part = entries[start : start + len(hashed)]  # a row group at a time: in cache
            part[:] = (hashed >> np.uint64(bits + 1)).view(np.int64)
            part <<= bits
            part |= np.arange(start, start + len(hashed), dtype=np.int64)
        entries.sort()
        self._entries = entries
        # A bucket per 8 rows or so (the top bits of their hashes): a lookup scans a few entries.
        buckets = max(1, min(bits - 3, 30))
        self._shift = shift = 63 - buckets
        starts: np.ndarray = np.zeros((1 << buckets) + 1, np.int32 if rows < 1 << 31 else np.int64)
        for at in range(0, rows, _PASS):
            np.add(
                starts[1:],
                np.bincount(entries[at : at + _PASS] >> shift, minlength=1 << buckets),
                out=starts[1:],
                casting="unsafe",
            )
        self._buckets = np.cumsum(starts, out=starts)
        self._refuse_twice()

    def __len__(self) -> int:
        return self._starts[-1]

    def row(self, key: str) -> int | None:
        """The row holding `key`, or None."""
        data = key.encode()
        entry = _hash(data) >> 1
        bits = self._bits
        hashed = entry >> bits
        bucket = entry >> self._shift
        entries = self._entries
        for at in range(self._buckets.item(bucket), self._buckets.item(bucket + 1)):
            found = entries.item(at)
            if found >> bits == hashed:
                row = found & ((1 << bits) - 1)
                if self._key_bytes(row) == data:
                    return row
        return None

    def key(self, row: int) -> str:
        """The key at `row`."""
        return bytes(self._key_bytes(row)).decode()

    def _key_bytes(self, row: int) -> memoryview:
        group = bisect.bisect_right(self._starts, row) - 1
        offsets, data = self._bytes[group]
        at = row - self._starts[group]
        return data[offsets.item(at) : offsets.item(at + 1)]

    def _refuse_twice(self) -> None:
        """The rows that share a hash (a few, by chance) must hold different keys."""
        entries, bits = self._entries, self._bits
        sharing: dict[int, set[int]] = {}
        for start in range(0, len(entries), _PASS):
            hashed = entries[start : start + _PASS + 1] >> bits  # with the next pass's first
            for at in np.flatnonzero(hashed[1:] == hashed[:-1]).tolist():
                rows = sharing.setdefault(hashed.item(at), set())
                rows.update(entries.item(start + i) & ((1 << bits) - 1) for i in (at, at + 1))
        for rows in sharing.values():
            if len({self.key(row) for row in rows}) != len(rows):
                raise SnapshotError("a key appears twice in one view")
