"""Argument types the subcommands share: a bad value is a usage error, not a crash later."""

from __future__ import annotations

import argparse
import os

from metalog.stack.config import StackConfig
from projector.kafka.security import CREDENTIALS_ENV, KafkaSecurity, security_for


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap``, ``--prefix`` and ``--credentials``: which cluster and topics, and
    how to sign in (defaults: ``METALOG_BOOTSTRAP``, ``METALOG_TOPIC_PREFIX``, the local
    stack's).

    Raises:
        StackError: A ``METALOG_*`` variable the defaults come from is malformed.
    """
    stack = StackConfig.from_env()
    parser.add_argument("--bootstrap", default=os.environ.get("METALOG_BOOTSTRAP", stack.bootstrap),
                        help="Kafka bootstrap servers (default: METALOG_BOOTSTRAP or the local "
                             "stack's)")  # fmt: skip
    parser.add_argument("--prefix", default=stack.topic_prefix,
                        help="topic name prefix (default: METALOG_TOPIC_PREFIX or metalog)")
    add_credentials_flag(parser)


def positive_int(text: str) -> int:
    """An integer of 1 or more (``type=`` of an argparse option).

    Raises:
        argparse.ArgumentTypeError: It is not one; argparse prints it as a usage error.
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed: use 1 or more")
    return value


def positive_float(text: str) -> float:
    """A number above 0, such as a timeout in seconds (``type=`` of an argparse option).

    Raises:
        argparse.ArgumentTypeError: It is not one; argparse prints it as a usage error.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not allowed: use a number above 0")
    return value


def add_credentials_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--credentials FILE`` (default ``METALOG_CREDENTIALS``) to a command that uses Kafka."""
    parser.add_argument("--credentials", metavar="FILE", default=os.environ.get(CREDENTIALS_ENV),
                        help="a credentials file for a secured cluster, such as the one `metalog "
                             f"up --secure` writes (default: {CREDENTIALS_ENV}; none: PLAINTEXT)")


def security(args: argparse.Namespace, role: str) -> KafkaSecurity:
    """The settings `role`'s principal signs in with, from ``--credentials`` (PLAINTEXT without).

    Raises:
        CredentialsError: The file is missing, unreadable or has no principal for `role`.
    """
    return security_for(role, args.credentials)
