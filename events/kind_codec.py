"""The codec of one record kind (event, command or reply): `KindCodec`, built once by `codec`.

It holds the kind's shipped schemas, their writers, and the current schema's readers:
a record of the current schema is read by `events.compiled.read` (into the model shape,
or straight into the models), an older one by fastavro with the current schema as the
reader (Avro schema resolution) and then reshaped, so every shipped version stays
readable. The record format and the two dict shapes: `events.codec`.

`METALOG_CODEC=fastavro` (read when a kind's codec is first built, never on
import: `codec_in_use`) makes the codec write with `fastavro.schemaless_writer`
and read every record the way it reads older ones, without importing the
compiled reader and writer: the same bytes and models, slower; a way around a
fault in the compiled code.
The default, `METALOG_CODEC=compiled`, uses them, and writes events
straight from their models (`model_writer`). Any other value raises
`UnknownCodec` when the first codec is built.
"""

import functools
import os
from collections.abc import Callable, Mapping
from io import BytesIO
from types import MappingProxyType, SimpleNamespace
from typing import Any

from fastavro import schemaless_reader, schemaless_writer
from pydantic import BaseModel, TypeAdapter, ValidationError

from events.commands import Command
from events.compiled.shape import compile_converters
from events.errors import DecodeError, EncodeError, UnknownCodec, UnknownSchema
from events.event import Event
from events.replies import Reply
from events.schema_store import (
    HEADER_LENGTH,
    MAGIC,
    SchemaKind,
    SchemaVersion,
    default_store,
)

CODECS = ("compiled", "fastavro")
"""The values `METALOG_CODEC` may take."""



def codec_in_use() -> str:
    """The Avro reader and writer `METALOG_CODEC` names: `compiled` (the default) or `fastavro`.

    Read when a kind's codec is built (`codec`), never on import.

    Raises:
        UnknownCodec: The variable names neither.
    """
    name = os.environ.get("METALOG_CODEC", "compiled")
    if name not in CODECS:
        raise UnknownCodec(name, CODECS)
    return name


Write = Callable[[dict[str, Any]], bytes]
"""The schemaless body of an Avro-shaped dict."""

AppendModel = Callable[[bytearray, Any], int | None]
"""Append a model's schemaless body to a `bytearray`; the offset of a marked field, or None."""

Read = Callable[[bytes, int], tuple[Any, int]]
"""A record's body from an offset: (the model-shaped dict, the offset after it)."""


def _writer(parsed: dict[str, Any], plain: bool) -> Write:
    """The writer of `parsed`: compiled, or fastavro's (`plain`: `METALOG_CODEC=fastavro`)."""
    if plain:

        def write(avro: dict[str, Any]) -> bytes:
            out = BytesIO()
            schemaless_writer(out, parsed, avro)
            return out.getvalue()

        return write
    # Imported here so that `METALOG_CODEC=fastavro` never loads the compiled code.
    from events.compiled.write import compile_writer

    return compile_writer(parsed)


def _current_reader(
    parsed: dict[str, Any],
    plain: bool,
    root: Any = None,
    tuples: Mapping[str, type[tuple[Any, ...]]] | None = None,
) -> Read | None:
    """The compiled reader of the current schema; None under `METALOG_CODEC=fastavro`.

    Args:
        parsed: The current schema.
        plain: `METALOG_CODEC=fastavro`: no compiled reader.
        root: The model it mirrors: read straight into the models; None: the model shape.
        tuples: With `root`, the records read as tuples (`events.compiled.read`).
    """
    if plain:
        return None
    from events.compiled.models import mirrors
    from events.compiled.read import compile_reader

    if root is None:
        return compile_reader(parsed, tagged=True)
    # Tables repeat column definitions (each is built once) and names (each is kept
    # once): an info read is already as the image stores it (`events.pool`).
    shared = {"TableInfoValue": ("catalog", "schema_name", "primary_key")}
    return compile_reader(parsed, models=mirrors(root), pooled=frozenset({"Column"}), shared=shared,
                          tuples=tuples or {})  # fmt: skip


_MODELS: Mapping[SchemaKind, Any] = MappingProxyType(
    {"event": Event, "command": Command, "reply": Reply}
)
_WRAPPER_FIELD: Mapping[SchemaKind, str | None] = MappingProxyType(
    {"event": None, "command": "command", "reply": "reply"}
)


class KindCodec:
    """The codec of one record kind, built once from the shipped schemas.

    Args:
        kind: The record kind.
    """

    def __init__(self, kind: SchemaKind) -> None:
        store = default_store()
        self.name = codec_in_use()
        """`compiled` or `fastavro`: the Avro reader and writer this codec uses."""
        self._plain = self.name == "fastavro"
        self.kind = kind
        self.current = store.current(kind)
        self._store = store
        self._writers = {v.fingerprint: v for v in store.versions(kind)}
        self._write_as = {
            v.fingerprint: _writer(v.parsed, self._plain) for v in store.versions(kind)
        }
        self._reader = self.current.parsed
        self._read_current = _current_reader(self._reader, self._plain)
        self._header = self.current.header
        self._field = _WRAPPER_FIELD[kind]
        self._to_avro, self._from_avro, self._from_model = compile_converters(self._reader)
        self._adapter: TypeAdapter[Any] = TypeAdapter(_MODELS[kind])
        self._model_writers: dict[str | None, AppendModel] = {}

    def to_avro(self, shaped: dict[str, Any]) -> dict[str, Any]:
        """Turn a model-shaped dict into the Avro shape (wrapping commands and replies)."""
        if self._field is not None:
            shaped = {self._field: shaped}
        try:
            out: dict[str, Any] = self._to_avro(shaped)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise EncodeError(
                f"the {self.kind} dict is not in the model shape (a union member needs its "
                f"`type` key): {exc!r}"
            ) from exc
        return out

    def model_to_avro(self, model: BaseModel) -> dict[str, Any]:
        """Turn a model of this kind straight into the Avro shape (no `model_dump`)."""
        holder: Any = model if self._field is None else SimpleNamespace(**{self._field: model})
        try:
            out: dict[str, Any] = self._from_model(holder)
        except (KeyError, AttributeError) as exc:
            raise EncodeError(f"{type(model).__name__} is not a {self.kind}: {exc!r}") from exc
        return out

    def from_avro(self, avro: dict[str, Any]) -> dict[str, Any]:
        """Turn an Avro-shaped dict into the model shape (unwrapping commands and replies)."""
        return self._unwrap(self._from_avro(avro))

    def _unwrap(self, shaped: dict[str, Any]) -> dict[str, Any]:
        """A command or reply out of its wrapper record; an event as it is."""
        return shaped if self._field is None else shaped[self._field]

    def body(self, avro: dict[str, Any], schema: SchemaVersion | None = None) -> bytes:
        """The schemaless Avro body of an Avro-shaped dict under `schema` (default current)."""
        return self._write(avro, schema or self.current)

    def encode_avro(self, avro: dict[str, Any]) -> bytes:
        """Single-object encode an Avro-shaped dict with the current schema."""
        return self._header + self._write(avro, self.current)

    def _write(self, avro: dict[str, Any], schema: SchemaVersion) -> bytes:
        try:
            return self._write_as[schema.fingerprint](avro)
        except Exception as exc:
            raise self._misfit(exc) from exc

    def _misfit(self, exc: Exception) -> EncodeError:
        return EncodeError(
            f"the {self.kind} does not fit its Avro schema ({type(exc).__name__}: {exc}); "
            "check field types and that integers fit a 64-bit long"
        )

    def read(self, data: bytes) -> tuple[dict[str, Any], SchemaVersion]:
        """Decode a single-object record to the model-shaped dict, with its writer schema.

        Raises:
            DecodeError: The bytes are not one complete record of this kind.
            UnknownSchema: The writer fingerprint is not a shipped schema.
        """
        if type(data) is not bytes:
            data = bytes(data)
        size = len(data)
        if size < HEADER_LENGTH or data[:2] != MAGIC:
            raise DecodeError(self._bad_header(data))
        writer = self._writers.get(data[2:HEADER_LENGTH])
        if writer is None:
            raise self._foreign(data[2:HEADER_LENGTH])
        compiled = self._read_current if writer is self.current else None
        try:
            if compiled is not None:
                datum, end = compiled(data, HEADER_LENGTH)
            else:  # an older writer, or METALOG_CODEC=fastavro: fastavro resolves it
                fo = BytesIO(data)
                fo.seek(HEADER_LENGTH)
                datum = schemaless_reader(fo, writer.parsed, self._reader, return_record_name=True)
                end = fo.tell()
        except Exception as exc:
            raise DecodeError(
                f"the {self.kind} body (writer v{writer.version}) is truncated or corrupt "
                f"({type(exc).__name__}: {exc}); re-read it from the log or send it to the DLQ"
            ) from exc
        if end != size:
            raise DecodeError(
                f"{size - end} trailing byte(s) after a complete {self.kind}: the record "
                "holds garbage after the Avro body; send it to the DLQ"
            )
        if not isinstance(datum, dict):
            raise DecodeError(f"the {self.kind} body is not an Avro record")
        try:
            shaped = datum if compiled is not None else self._from_avro(datum)
            return self._unwrap(shaped), writer
        except Exception as exc:  # a writer schema whose unions the reader lacks
            raise DecodeError(f"the {self.kind} body has an unexpected shape: {exc}") from exc

    def decode_dict(self, data: bytes) -> dict[str, Any]:
        """Decode to the model-shaped dict without pydantic validation."""
        return self.read(data)[0]

    @functools.cached_property
    def _read_models(self) -> Read | None:
        """The current schema's reader straight into the models (a record kind without a
        wrapper); compiled when first used."""
        return self.reader_with_tuples({})

    def decode_model(self, data: bytes, read: Read | None = None) -> Any:
        """Decode and validate a record into its model, as `validate(decode_dict(data))`.

        A record of the current schema is read straight into the models (the
        compiled reader builds them and runs their validators; see
        `events.compiled.read`), without the model-shaped dict and pydantic's
        pass over it. Any other record, and one that read refuses, goes the
        other way, so what is refused and the error saying why are that path's.

        Args:
            data: The record.
            read: The current schema's reader to use (`reader_with_tuples`); None: the
                one straight into the models.

        Raises:
            DecodeError: The bytes are not one complete record of this kind, or
                it does not validate.
            UnknownSchema: The writer fingerprint is not a shipped schema.
        """
        if read is None:
            read = self._read_models
        if read is not None and type(data) is bytes and data.startswith(self._header):
            try:
                model, end = read(data, HEADER_LENGTH)
            except Exception:  # refused: the other path says why, in its own words
                pass
            else:
                if end == len(data):
                    return model
        return self.validate(self.decode_dict(data))

    def reader_with_tuples(self, tuples: Mapping[str, type[tuple[Any, ...]]]) -> Read | None:
        """A reader of the current schema straight into the models, but for the records
        named in `tuples`, read as tuples (`events.compiled.read.compile_reader`); None
        for a kind with a wrapper record or under `METALOG_CODEC=fastavro`."""
        if self._field is not None:
            return None
        return _current_reader(self._reader, self._plain, _MODELS[self.kind], tuples)

    def model_writer(self, mark: str | None = None) -> AppendModel | None:
        """The current schema's writer straight from a model of this kind (no Avro-shaped
        dict: `events.compiled.write.compile_model_writer`), compiled once per `mark`;
        None for a kind with a wrapper record or under `METALOG_CODEC=fastavro`.

        Args:
            mark: A top-level field whose offset in the output the writer returns.

        The writer raises `EncodeError` for a model that does not fit the schema.
        """
        if self._field is not None or self._plain:
            return None
        found = self._model_writers.get(mark)
        if found is None:
            from events.compiled.write import compile_model_writer

            # Table infos repeat the columns of their table: each is written once.
            write = compile_model_writer(self._reader, mark, frozenset({"Column"}))

            def append(out: bytearray, model: Any) -> int | None:
                try:
                    return write(out, model)
                except Exception as exc:
                    raise self._misfit(exc) from exc

            found = self._model_writers[mark] = append
        return found

    def validate(self, shaped: dict[str, Any]) -> Any:
        """Validate a model-shaped dict into the model.

        Raises:
            DecodeError: The dict does not validate.
        """
        try:
            return self._adapter.validate_python(shaped)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(record)"
            raise DecodeError(
                f"the {self.kind} does not validate ({exc.error_count()} error(s); first at "
                f"{where}: {first['msg']}); the writer broke the contract, send it to the DLQ"
            ) from exc

    def _bad_header(self, data: bytes) -> str:
        if not data:
            return f"empty record where a {self.kind} was expected"
        if data[:2] != MAGIC[: len(data[:2])]:
            return (
                f"the record starts with {data[:2].hex()} instead of c301: it is not "
                "Avro single-object encoded (wrong topic or serializer?)"
            )
        return f"{len(data)} byte(s) is shorter than the {HEADER_LENGTH}-byte header"

    def _foreign(self, fingerprint: bytes) -> DecodeError:
        other = self._store.by_fingerprint.get(fingerprint)
        if other is None:
            return UnknownSchema(fingerprint)
        return DecodeError(
            f"the record is a {other.kind} (schema v{other.version}), not a {self.kind}: "
            f"read it with decode_{other.kind}"
        )


@functools.cache
def codec(kind: SchemaKind) -> KindCodec:
    """The codec of `kind`, built once."""
    return KindCodec(kind)
