"""Checkpoint signing keys on disk: `metalog keys generate` writes them; leader and audit read them.

The private key is PEM (PKCS #8, unencrypted) in a file of mode 0600: the
leader reads it at start (`metalog leader --signing-key FILE`); it never goes
into the log. The public key is PEM (SubjectPublicKeyInfo): auditors and
witnesses hold it.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from events.checkpoint import Signer
from events.errors import MetalogError

PRIVATE_NAME = "checkpoint.key"
"""The private key's file name in `metalog keys generate --out DIR`."""

PUBLIC_NAME = "checkpoint.pub"
"""The public key's file name."""


class KeyFileError(MetalogError):
    """A key file that cannot be written or read, or holds no Ed25519 key."""


def generate(directory: Path) -> tuple[Path, Path, Ed25519PublicKey]:
    """Write a new key pair into `directory` (created if missing); never overwrite one.

    Returns:
        The private key's path, the public key's path, and the public key.

    Raises:
        KeyFileError: A key file is already there, or the directory cannot be written.
    """
    private_path, public_path = directory / PRIVATE_NAME, directory / PUBLIC_NAME
    for path in (private_path, public_path):
        if path.exists():
            raise KeyFileError(f"{path} exists: keys are never overwritten; choose another --out")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # Created 0600 from the start: the key is never readable by others, not even briefly.
        descriptor = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(private_pem)
        public_path.write_bytes(public_pem(key.public_key()))
    except OSError as exc:
        raise KeyFileError(f"cannot write keys in {directory}: {exc}") from exc
    return private_path, public_path, key.public_key()


def public_pem(key: Ed25519PublicKey) -> bytes:
    """The PEM text of a public key."""
    return key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)


def load_signer(path: Path) -> Signer:
    """The leader's signer from a private key file.

    Raises:
        KeyFileError: The file cannot be read or holds no Ed25519 private key.
    """
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise KeyFileError(f"cannot read the signing key {path}: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 private key: "
                           "make one with `metalog keys generate`")  # fmt: skip
    return Signer(key)


def load_public_key(pem: bytes, where: str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM text.

    Raises:
        KeyFileError: The text holds no Ed25519 public key.
    """
    try:
        key = load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"cannot read the public key {where}: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{where} holds a {type(key).__name__}, not an Ed25519 public key")
    return key


def read_public_key(path: Path) -> Ed25519PublicKey:
    """An Ed25519 public key from a file (see `load_public_key`)."""
    try:
        pem = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read the public key {path}: {exc}") from exc
    return load_public_key(pem, str(path))
