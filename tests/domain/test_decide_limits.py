"""`decide` never raises: a failing rule or encoding is `InternalError`, a big event `TooLarge`."""

from typing import Any

import pytest

from events.codec import encode_event, encode_reply
from events.commands import AlterTable, CreateTable, DropTable
from events.event import Event
from events.values import TableVersion
from producers.decide import core as decide_module
from producers.decide.core import Rejection, decide, decide_record
from producers.decide.rules.common import Change
from producers.decide.sizes import DEFAULT_RECORD_LIMIT, MAX_MESSAGE_CHARS, RECORD_OVERHEAD
from producers.decide.trusted import trusted
from producers.errors import InternalError, TooLarge
from tests.domain.builders import CATALOG, command, create, local, stamps


def _options(start: int, count: int = 300, size: int = 1_000) -> dict[str, str]:
    """`count` options of `size` characters each: an info grows by about count * size bytes."""
    return {f"k{n:04}": "v" * size for n in range(start, start + count)}


def test_a_rule_that_raises_refuses_its_command_with_internal_error_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = local()
    catalog.submit(create())
    before = catalog.image

    def broken(image: Any, cmd: Any) -> Change:
        raise RuntimeError("the rule tripped over itself")

    monkeypatch.setitem(decide_module._RULES, AlterTable, broken)
    outcome = decide(before, command(AlterTable, table_name="orders"), stamps()())

    assert isinstance(outcome, Rejection) and isinstance(outcome.error, InternalError)
    assert outcome.error.message == "RuntimeError: the rule tripped over itself"
    assert isinstance(outcome.error.__cause__, RuntimeError)
    reply = outcome.reply(command(AlterTable, table_name="orders"))
    assert reply.code == "InternalError"
    assert catalog.image is before
    # The next command is decided as usual.
    assert isinstance(decide(before, command(DropTable, table_name="orders"), stamps()()), Event)


def test_an_event_that_does_not_encode_refuses_its_command_with_internal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = decide_module._RULES[CreateTable]

    def overflowing(image: Any, cmd: Any) -> Change:
        change = real(image, cmd)
        # A version past an Avro long, as an unchecked sum in a rule would make.
        huge = trusted(TableVersion, table_id=change.tables[0].table_id, version=2**63)
        return Change(change.intent, change.requirements, change.mutations, (huge,))

    monkeypatch.setitem(decide_module._RULES, CreateTable, overflowing)
    outcome = decide(local().image, create(), stamps()())

    assert isinstance(outcome, Rejection) and isinstance(outcome.error, InternalError)
    assert outcome.error.message.startswith("EncodeError: ")
    assert "64-bit long" in outcome.error.message


def test_options_that_grow_an_info_past_the_default_limit_are_refused_as_too_large() -> None:
    catalog = local()
    catalog.submit(create())
    # Each alter adds ~300 KB of options; its event holds the info and the options it sets.
    for start in (0, 300):
        catalog.submit(command(AlterTable, table_name="orders", set_options=_options(start)))
    before = catalog.image

    third = command(AlterTable, table_name="orders", set_options=_options(600))
    outcome = decide(before, third, stamps()())

    assert isinstance(outcome, Rejection) and isinstance(outcome.error, TooLarge)
    message = outcome.error.message
    assert f"limit of {DEFAULT_RECORD_LIMIT:,} bytes" in message
    assert "largest field is `set_options`" in message
    assert f"`__table_info/{before.head.table_id('public', 'orders')}`" in message
    # Nothing was written, and a small change of the same table still goes through.
    assert catalog.image is before
    small = command(AlterTable, table_name="orders", set_options={"ttl": "1d"})
    assert isinstance(decide(before, small, stamps()()), Event)


def test_an_event_of_exactly_the_limit_is_accepted_and_one_byte_over_is_refused() -> None:
    image = local().image
    cmd = create(options=_options(0, count=10))
    accepted = decide_record(image, cmd, stamps()(), limit=10**9)
    assert not isinstance(accepted, Rejection)
    # Measured with the plain encoder, not the bytes decide returned.
    size = len(encode_event(accepted.event)) + len(CATALOG.encode())
    assert accepted.record == encode_event(accepted.event)

    assert isinstance(decide(image, cmd, stamps()(), limit=size), Event)
    refused = decide(image, cmd, stamps()(), limit=size - 1)
    assert isinstance(refused, Rejection) and isinstance(refused.error, TooLarge)
    assert f"would take {size:,} bytes" in refused.error.message


def test_the_default_limit_is_kafkas_default_minus_the_record_overhead() -> None:
    assert DEFAULT_RECORD_LIMIT == 1_048_588 - RECORD_OVERHEAD
    assert RECORD_OVERHEAD >= 61 + 25 + 50  # batch header, record framing, offset header


def test_a_rejection_echoing_a_long_name_gives_a_small_reply() -> None:
    catalog = local()
    # Built without validation: a command from the topic may come from any producer.
    drop = DropTable.model_construct(
        command_id="long-1", catalog=CATALOG, actor="tester", schema_name="public",
        table_name="t" * 300_000,
    )  # fmt: skip
    outcome = decide(catalog.image, drop, stamps()())

    assert isinstance(outcome, Rejection)
    reply = outcome.reply(drop)
    assert reply.code == "InvalidName"
    assert len(reply.message) <= MAX_MESSAGE_CHARS
    assert len(encode_reply(reply)) < 3 * MAX_MESSAGE_CHARS
