"""Random (version 4) UUID strings for event and command ids, cheaper than `uuid.uuid4()`.

`str(uuid.uuid4())` makes one `getrandom` system call and a `UUID` object per
id: 6-8 % of the leader's CPU per command (an event id each) and a few µs of
the client's (a command id each). `random_uuid` takes its bytes from the same
OS source (`os.urandom`) 256 ids at a time and formats them directly; the
strings are the same shape as `str(uuid.uuid4())`.
"""

from __future__ import annotations

import os
import threading

_PER_READ = 256
"""Ids per `os.urandom` call."""

_lock = threading.Lock()
_pool: list[str] = []


def random_uuid() -> str:
    """A random version-4 UUID in its canonical form (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`)."""
    with _lock:
        if not _pool:
            _pool.extend(_fresh(_PER_READ))
        return _pool.pop()


def _fresh(count: int) -> list[str]:
    raw = bytearray(os.urandom(16 * count))
    ids = []
    for at in range(0, 16 * count, 16):
        raw[at + 6] = raw[at + 6] & 0x0F | 0x40  # version 4
        raw[at + 8] = raw[at + 8] & 0x3F | 0x80  # RFC 4122 variant
        h = raw[at : at + 16].hex()
        ids.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return ids


def _forget_in_child() -> None:
    # A forked child must not hand out the ids its parent will also use.
    global _lock
    _lock = threading.Lock()
    _pool.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
