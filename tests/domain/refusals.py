"""Refusals at the edge, checked twice: by `validate.check`, and by `decide` as a leader sees them.

Every refused command is also decided after an Avro round trip, as a leader
gets it from the commands topic: `decide` refuses it with the same type.
"""

from __future__ import annotations

from typing import Any

import pytest

from events.codec import decode_command, encode_command
from events.commands import CommandBase
from events.errors import EncodeError
from producers.decide.core import Rejection, decide
from producers.decide.rules import validate
from projector.fold.image import Image
from tests.domain.builders import stamps


def refused(kind: type[Exception], cmd: CommandBase, *parts: str) -> str:
    """Check that `validate.check` and `decide` (after an Avro round trip) refuse `cmd`."""
    with pytest.raises(kind) as caught:
        validate.check(cmd)
    message = str(caught.value)
    for part in parts:
        assert part in message
    assert decided(cmd, kind) == message
    return message


def decided(cmd: CommandBase, kind: type[Exception], image: Image | None = None) -> str:
    """Decide `cmd` as a leader gets it from the topic; it must be refused with `kind`."""
    try:
        from_topic: Any = decode_command(encode_command(cmd))  # type: ignore[arg-type]
    except EncodeError:  # a surrogate half cannot be sent at all: decide it as built
        from_topic = cmd
    outcome = decide(image or Image.empty(cmd.catalog), from_topic, stamps()())
    assert isinstance(outcome, Rejection) and type(outcome.error) is kind
    return outcome.error.message
