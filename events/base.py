"""The base of every wire model: frozen, strict, mirrored by an Avro record."""

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A frozen model mirroring one Avro record of `events/schemas/`.

    Records that sit in an Avro union carry a `type` literal equal to the Avro
    record name; the codec maps it to and from the union branch.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
