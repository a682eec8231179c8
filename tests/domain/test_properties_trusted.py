"""`trusted()` against full validation, over random command sequences (issue 16, item 8).

`decide` builds its events, their mutations and the bumped table infos with
`producers.decide.trusted` (`trusted`, `replaced`): no pydantic validation,
for speed, on the promise that every part is valid already. These properties
hold it to that promise over valid, hostile and id-reusing steps, in both
publish modes and with everything published at the end: no command is
refused with `InternalError` (what `decide` answers when the encoder refuses
a value of the wrong type), and every event it accepts (and the leader's
`LeaderElected`) is exactly what full validation gives, and so is every model
nested in it.
"""

from collections.abc import Iterator
from itertools import chain

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from events.event import Event
from producers.decide.core import Rejection
from tests.domain.runs import PROPERTIES, Run, describe
from tests.domain.steps import MODES, Step, hostile_steps, plans, role_steps, valid_steps

STEPS = plans(st.one_of(valid_steps, role_steps, hostile_steps()))


@PROPERTIES
@given(mode=MODES, steps=STEPS)
def test_no_command_is_refused_with_internal_error(mode: str, steps: list[Step]) -> None:
    """A value `trusted` let through with the wrong type fails here, at the encoder."""
    run = Run(mode)
    for step, _, outcome in chain(run.play(steps), run.publish_everything()):
        if isinstance(outcome, Rejection):
            assert outcome.error.code != "InternalError", f"{step!r}: {describe(outcome)}"


@PROPERTIES
@given(mode=MODES, steps=STEPS)
def test_every_accepted_event_equals_its_fully_validated_copy(mode: str, steps: list[Step]) -> None:
    run = Run(mode)
    for _ in chain(run.play(steps), run.publish_everything()):
        pass
    for event in run.log:
        assert Event.model_validate(event.model_dump()) == event, event.intent


@PROPERTIES
@given(mode=MODES, steps=STEPS)
def test_every_model_decide_builds_is_what_validating_its_fields_gives(
    mode: str, steps: list[Step]
) -> None:
    """Each model in each event: same values and types, field order, and the defaults of
    the fields left out (a round trip through `model_dump` would carry a wrong default)."""
    run = Run(mode)
    for _ in chain(run.play(steps), run.publish_everything()):
        pass
    for event in run.log:
        for model in models(event):
            problem = unlike_validated(model)
            assert problem is None, f"rv {event.resource_version}: {problem}"


def models(value: object) -> Iterator[BaseModel]:
    """`value` and every model inside it (fields, tuples, dict values), depth first."""
    if isinstance(value, BaseModel):
        yield value
        for name in type(value).model_fields:
            yield from models(getattr(value, name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from models(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from models(item)


def unlike_validated(model: BaseModel) -> str | None:
    """How `model` differs from validating the fields it was given, or None.

    Nested models are taken as they are (pydantic does not validate an
    instance again); `models` walks into them, so each is checked on its own.
    """
    kind = type(model)
    given_fields = {name: getattr(model, name) for name in model.model_fields_set}
    try:
        model.model_dump(warnings="error")  # a value of another type than its field's
        validated = kind.model_validate(given_fields)
    except (ValidationError, ValueError, TypeError) as error:
        return f"{kind.__name__} is not valid: {str(error)[:300]}"
    if validated != model:
        differ = [n for n in kind.model_fields if getattr(model, n) != getattr(validated, n)]
        shown = "; ".join(
            f"{n}={getattr(model, n)!r:.80} validates to {getattr(validated, n)!r:.80}"
            for n in differ
        )
        return f"{kind.__name__}: {shown or 'differs from its validated copy'}"
    if list(validated.__dict__) != list(model.__dict__):
        return f"{kind.__name__}: fields in order {list(model.__dict__)}"
    return None
