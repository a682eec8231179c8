"""The base of every wire model: frozen, strict, mirrored by an Avro record."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

Long = Annotated[int, Field(ge=LONG_MIN, le=LONG_MAX)]
"""An integer within Avro `long` range: every integer field of the contract is one."""


class Record(BaseModel):
    """A frozen model mirroring one Avro record of `events/schemas/`.

    Records that sit in an Avro union carry a `type` literal equal to the Avro
    record name; the codec maps it to and from the union branch.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
