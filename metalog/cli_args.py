"""Argument types the subcommands share: a bad value is a usage error, not a crash later."""

from __future__ import annotations

import argparse


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
