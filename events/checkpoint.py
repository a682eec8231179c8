"""Signed checkpoints: the note a leader signs with Ed25519 and an outsider keeps.

A checkpoint says "catalog C's log, up to resource_version N, has chain hash
H; leader_epoch E wrote this at time T". It is modelled on C2SP
`tlog-checkpoint` / `signed-note`: the signed bytes are a short UTF-8 text,
one field per line, each line ending in a newline:

    metalog catalog <catalog>
    <resource_version>
    <chain hash, standard base64>
    leader_epoch <leader_epoch>
    time <occurred_at, RFC 3339 UTC with microseconds>

The kept note is that text, an empty line and one signature line,
`— metalog <base64(key_id || signature)>` (an em dash, the key name, then the
4-byte key id and the 64-byte Ed25519 signature). The key id is the first 4
bytes of SHA-256(key name || LF || 0x01 || the 32-byte public key), as
signed-note defines it for Ed25519.

In the log a checkpoint is a `CheckpointSigned` control event: it takes the
next resource_version like every control event (so density checks stay
uniform) and covers the event before it (`resource_version - 1`, whose hash
is its `prev_hash`); it cannot cover itself, since it cannot hold its own hash.
The catalog, leader_epoch and time come from its envelope.

Signing and verifying are deterministic (no clock, no randomness): keys are
made and read from files outside the pure core (`projector.checkpoint_keys`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from events.errors import MetalogError
from events.event import Event
from events.intents import CheckpointSigned

KEY_NAME = "metalog"
"""The key name of the signature line (signed-note's `<key name>`)."""

ORIGIN_PREFIX = "metalog catalog "
"""The first line of a note: this prefix and the catalog (signed-note's origin)."""

_DASH = "\u2014"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class CheckpointNoteError(MetalogError):
    """A kept checkpoint note that is not in the format `metalog audit checkpoint` writes."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"not a metalog checkpoint note: {reason}; export one with `metalog audit checkpoint`"
        )


def key_id(public_key: Ed25519PublicKey) -> bytes:
    """The 4-byte id of an Ed25519 public key (signed-note's key hash)."""
    raw = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return hashlib.sha256(KEY_NAME.encode() + b"\n\x01" + raw).digest()[:4]


def micros(at: datetime) -> int:
    """Microseconds since the Unix epoch of an aware datetime (the Avro timestamp)."""
    return (at - _EPOCH) // timedelta(microseconds=1)


def render_time(occurred_micros: int) -> str:
    """RFC 3339 UTC with microseconds of an Avro `timestamp-micros`."""
    return (_EPOCH + timedelta(microseconds=occurred_micros)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One signed checkpoint: what the note states and its signature.

    Attributes:
        catalog: The catalog whose log it covers.
        resource_version: The last resource_version covered.
        chain_hash: The hash of the event at `resource_version`.
        leader_epoch: The leader_epoch of the leader that signed.
        occurred_micros: When it was signed (microseconds since the epoch, UTC).
        key_id: The signing key's 4-byte id.
        signature: The 64-byte Ed25519 signature of `text()`.
    """

    catalog: str
    resource_version: int
    chain_hash: bytes
    leader_epoch: int
    occurred_micros: int
    key_id: bytes = b""
    signature: bytes = b""

    def text(self) -> bytes:
        """The signed bytes (the note without its signature line)."""
        return note_text(
            self.catalog, self.resource_version, self.chain_hash, self.leader_epoch,
            self.occurred_micros,
        )  # fmt: skip

    def note(self) -> str:
        """The kept note: the text, an empty line, the signature line."""
        signed = base64.b64encode(self.key_id + self.signature).decode()
        return f"{self.text().decode()}\n{_DASH} {KEY_NAME} {signed}\n"

    def verifies(self, public_key: Ed25519PublicKey) -> bool:
        """Whether `public_key` signed this checkpoint (its id and its signature)."""
        if self.key_id != key_id(public_key):
            return False
        try:
            public_key.verify(self.signature, self.text())
        except InvalidSignature:
            return False
        return True


def note_text(
    catalog: str, resource_version: int, chain_hash: bytes, leader_epoch: int, occurred: int
) -> bytes:
    """The signed text of a checkpoint (see the module docstring)."""
    return (
        f"{ORIGIN_PREFIX}{catalog}\n{resource_version}\n"
        f"{base64.b64encode(chain_hash).decode()}\n"
        f"leader_epoch {leader_epoch}\ntime {render_time(occurred)}\n"
    ).encode()


def from_event(event: Event) -> Checkpoint:
    """The checkpoint a `CheckpointSigned` event states.

    Raises:
        TypeError: The event is not a checkpoint.
    """
    intent = event.intent
    if not isinstance(intent, CheckpointSigned):
        raise TypeError(f"{type(intent).__name__} is not a CheckpointSigned intent")
    return Checkpoint(
        event.catalog, intent.resource_version, intent.chain_hash, event.leader_epoch,
        micros(event.occurred_at), intent.key_id, intent.signature,
    )  # fmt: skip


class Signer:
    """An Ed25519 private key that signs checkpoints (the leader's; never in the log).

    Args:
        private_key: The key.
    """

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key
        self.public_key = private_key.public_key()
        self.key_id = key_id(self.public_key)

    def sign(self, unsigned: Checkpoint) -> Checkpoint:
        """`unsigned` with this key's id and signature."""
        signature = self._key.sign(unsigned.text())
        return Checkpoint(
            unsigned.catalog, unsigned.resource_version, unsigned.chain_hash,
            unsigned.leader_epoch, unsigned.occurred_micros, self.key_id, signature,
        )  # fmt: skip


def parse_note(text: str) -> Checkpoint:
    """Read a kept note back (the inverse of `Checkpoint.note`).

    Raises:
        CheckpointNoteError: The text is not a note in that format.
    """
    body, sep, signature_line = text.rstrip("\n").rpartition("\n\n")
    if not sep:
        raise CheckpointNoteError("no empty line before the signature line")
    lines = body.split("\n")
    if len(lines) != 5 or not lines[0].startswith(ORIGIN_PREFIX):
        raise CheckpointNoteError(f"expected 5 lines starting with {ORIGIN_PREFIX!r}")
    parts = signature_line.split(" ")
    if len(parts) != 3 or parts[0] != _DASH or parts[1] != KEY_NAME:
        raise CheckpointNoteError(f"the signature line is not `{_DASH} {KEY_NAME} <base64>`")
    try:
        signed = base64.b64decode(parts[2], validate=True)
        chain_hash = base64.b64decode(lines[2], validate=True)
        resource_version = int(lines[1])
        label, epoch = lines[3].split(" ")
        time_label, when = lines[4].split(" ")
        occurred = datetime.strptime(when, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except (binascii.Error, ValueError) as exc:
        raise CheckpointNoteError(f"a malformed line ({exc})") from exc
    if label != "leader_epoch" or time_label != "time" or len(signed) != 4 + 64:
        raise CheckpointNoteError("the leader_epoch/time lines or the signature length are off")
    checkpoint = Checkpoint(
        lines[0][len(ORIGIN_PREFIX) :], resource_version, chain_hash, int(epoch),
        micros(occurred), signed[:4], signed[4:],
    )  # fmt: skip
    if checkpoint.text().decode() != body + "\n":
        raise CheckpointNoteError("the text is not in canonical form (spacing or digits)")
    return checkpoint
