"""Events read packed: a replay's events as named tuples, not models.

A replay decodes and folds millions of events and hands them to nothing else.
Building each event, its intent, its requirements and its table versions as
pydantic models (a dict and four slot writes each) cost it about 2 µs an event,
for a fold that only reads their fields. So a replay reads those records
(`RECORDS`, `projector.replay.source.packed_decoder`) as named tuples of the same
fields, named like their models and read like them: a field by its name, the
tag as `type`. Where the fold tells records apart by class, it knows the forms
too (`FORM`): a change intent's is folded as the intent, a requirement's is
checked as the requirement. The values in them take the forms the image stores
(`projector.fold.packing.PACKED_RECORDS`). Mutations stay models: their
validator must run.

`unpacked` gives back the event as logged, for what outlives the fold: a
pending change, or the first event past a replay's point.
"""

from collections import namedtuple
from typing import Any, TypeVar

from pydantic import BaseModel

from events.changes import KeyAbsent, KeyAtVersion, KeyPresent, Mutation, Requirement, ValueEquals
from events.event import Event
from events.intents import CHANGE_INTENTS
from events.values import TableVersion
from projector.fold.packing import PACKED_FORMS, PACKED_RECORDS, unpack


def _form(model: type[BaseModel]) -> type[tuple[Any, ...]]:
    """A named tuple of the model's fields, named like it; its tag (`type`) is on the class."""
    tag = model.model_fields.get("type")
    fields = [name for name in model.model_fields if name != "type"]
    fields_only = namedtuple(model.__name__, fields)  # type: ignore[misc]
    tagged = {"__slots__": (), "type": None if tag is None else tag.default}
    return type(model.__name__, (fields_only,), tagged)


_PACKED_MODELS: tuple[type[BaseModel], ...] = (
    Event,
    TableVersion,
    KeyAbsent,
    KeyPresent,
    KeyAtVersion,
    ValueEquals,
    *CHANGE_INTENTS,
)

FORM = {model: _form(model) for model in _PACKED_MODELS}
"""A model → the named tuple a replay reads its record as."""

_MODEL = {form: model for model, form in FORM.items()}

RECORDS: dict[str, type[tuple[Any, ...]]] = {
    **PACKED_RECORDS,
    **{model.__name__: form for model, form in FORM.items()},
}
"""Every record a replay reads as a tuple, by name: the values' packed forms and `FORM`'s."""


def unpacked(event: Event) -> Event:
    """The event as logged, from one a replay read packed (`RECORDS`); a model as it is.

    An event read as a model was read by pydantic (an older schema's, or not a
    replay's): its values are models too.
    """
    if type(event) is Event:
        return event
    fields = event._asdict()  # type: ignore[attr-defined]
    fields.update(
        tables=tuple(map(_model, event.tables)),
        intent=_model(event.intent),
        requirements=tuple(_with_value(_model(r)) for r in event.requirements),
        mutations=tuple(map(_with_value, event.mutations)),
    )
    return Event.model_construct(**fields)


def _model(record: Any) -> Any:
    """The model a record's form stands for; a model (a control intent) as it is."""
    model = _MODEL.get(type(record))
    return record if model is None else model.model_construct(**record._asdict())


_Valued = TypeVar("_Valued", Mutation, Requirement)


def _with_value(record: _Valued) -> _Valued:
    """The record with its value unpacked, if it holds a packed form; else itself."""
    value = getattr(record, "value", None)
    if value is None or type(value) not in PACKED_FORMS:
        return record
    return record.model_copy(update={"value": unpack(value)})
