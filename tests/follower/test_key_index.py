"""A loaded snapshot's key index (`projector.snapshot.index`) against a plain dict."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from projector.errors import SnapshotError
from projector.snapshot import index
from projector.snapshot.index import KeyIndex, key_hash, key_hashes


def _keys(seed: int, count: int) -> list[str]:
    """Distinct keys of every shape: ASCII and not, empty, 8-byte multiples, past 512 bytes."""
    rng = random.Random(seed)
    shapes = [
        lambda: f"__table_info/{rng.randrange(10**9)}",
        lambda: f"__dn_table/{rng.randrange(64)}/{rng.randrange(10**6)}",
        lambda: "__table_name/c/é/" + "".join(rng.choices("abcdéß日\0", k=rng.randrange(12))),
        lambda: "x" * rng.choice((0, 7, 8, 9, 16)) + str(rng.randrange(99)),
        lambda: "r/" + "".join(rng.choices("ab", k=rng.randrange(500, 700))),
    ]
    found = dict.fromkeys([""])
    while len(found) < count:
        found[rng.choice(shapes)()] = None
    return list(found)


def _columns(keys: list[str], sizes: list[int]) -> list[pa.Array]:
    """`keys` cut into string columns of these sizes; one of them a slice (offset > 0)."""
    columns, at = [], 0
    for size in sizes:
        columns.append(pa.array(["pad", *keys[at : at + size]], pa.string()).slice(1))
        at += size
    return columns


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_column_hashes_equal_each_key_hashed_alone(seed: int) -> None:
    keys = _keys(seed, 400)
    column = pa.array(["a", *keys], pa.string()).slice(1)
    assert key_hashes(column).tolist() == [key_hash(key) for key in keys]


@pytest.mark.parametrize(("seed", "passes"), [(1, index._PASS), (2, 7), (3, 64)])
def test_the_index_finds_the_row_a_dict_would_and_nothing_else(
    seed: int, passes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`passes`: entries per pass over the sorted array while building (small: many passes)."""
    monkeypatch.setattr(index, "_PASS", passes)
    keys = _keys(seed, 3000)
    built = KeyIndex(_columns(keys, [1000, 0, 1, 1999]))
    assert len(built) == len(keys)
    assert [built.row(key) for key in keys] == list(range(len(keys)))
    assert [built.key(row) for row in range(len(keys))] == keys
    absent = [key + "!" for key in keys[:300]] + [key[:-1] for key in keys[:300] if key]
    assert [built.row(key) for key in absent if key not in set(keys)] == [None] * len(
        [key for key in absent if key not in set(keys)]
    )
    assert KeyIndex([]).row("") is None and len(KeyIndex([])) == 0


@pytest.mark.parametrize("passes", [index._PASS, 1])
def test_keys_that_share_a_hash_are_told_apart_and_a_repeated_one_refused(
    passes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key under one hash: lookups compare the keys, and a key held twice among
    them is found even when another key's row sorts between its two (and the passes
    over the sorted array see them apart)."""
    monkeypatch.setattr(index, "_PASS", passes)
    monkeypatch.setattr(index, "_hash", lambda data: 12345)
    monkeypatch.setattr(index, "key_hashes", lambda keys: np.full(len(keys), 12345, np.uint64))
    keys = _keys(4, 50)
    built = KeyIndex(_columns(keys, [20, 30]))
    assert [built.row(key) for key in keys] == list(range(50)) and built.row("nope") is None
    with pytest.raises(SnapshotError, match="appears twice"):
        KeyIndex(_columns([keys[0], keys[1], keys[0]], [1, 2]))


@pytest.mark.parametrize("passes", [index._PASS, 5])
def test_a_key_repeated_across_row_groups_is_refused(
    passes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index, "_PASS", passes)
    keys = _keys(5, 500)
    with pytest.raises(SnapshotError, match="appears twice"):
        KeyIndex(_columns([*keys, keys[321]], [250, 251]))
