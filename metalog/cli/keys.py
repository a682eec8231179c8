"""``metalog keys generate``: a new Ed25519 key pair for signed checkpoints."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from events.checkpoint import key_id
from metalog.cli.output import add_json_flag, print_json
from projector.checkpoint_keys import generate


def _generate(args: argparse.Namespace) -> int:
    private_path, public_path, public = generate(Path(args.out))
    document = {"private_key": str(private_path), "public_key": str(public_path),
                "key_id": key_id(public).hex()}  # fmt: skip
    if args.json:
        print_json(document)
    else:
        print(f"private key {private_path} (mode 0600: give it to the leader only, "
              f"`metalog leader --signing-key {private_path}`)")  # fmt: skip
        print(f"public key  {public_path} (key id {document['key_id']}: give it to auditors)")
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``keys generate``."""
    parser = subparsers.add_parser("keys", help="signing keys for checkpoints")
    commands = parser.add_subparsers(title="keys commands", metavar="COMMAND")
    generate_parser = commands.add_parser(
        "generate", help="write a new Ed25519 key pair (checkpoint.key 0600, checkpoint.pub)"
    )
    generate_parser.add_argument("--out", required=True, help="the directory to write them in")
    add_json_flag(generate_parser, "{private_key, public_key, key_id}")
    generate_parser.set_defaults(func=_generate)
