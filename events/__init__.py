"""The event contract: Avro schemas, pydantic models, codec and hash chain."""

from events.base import Long, Record
from events.chain import (
    GENESIS_HASH,
    canonical_body,
    event_hash,
    seal,
    verify_chain,
    verify_encoded_chain,
)
from events.changes import (
    KeyAbsent,
    KeyAtVersion,
    KeyPresent,
    Mutation,
    MutationOp,
    Requirement,
    ValueEquals,
)
from events.codec import (
    decode_command,
    decode_command_dict,
    decode_event,
    decode_event_dict,
    decode_reply,
    decode_reply_dict,
    encode_command,
    encode_command_dict,
    encode_event,
    encode_event_dict,
    encode_reply,
    encode_reply_dict,
    from_avro_dict,
    to_avro_dict,
)
from events.commands import Command
from events.errors import (
    ChainBroken,
    DecodeError,
    EncodeError,
    MetalogError,
    UnknownCodec,
    UnknownSchema,
)
from events.event import Event
from events.intents import CHANGE_INTENTS, CONTROL_INTENTS, Intent
from events.replies import Committed, Rejected, Reply
from events.schema_store import (
    HEADER_LENGTH,
    SchemaKind,
    SchemaStore,
    SchemaVersion,
    default_store,
)
from events.spark_schemas import SparkDecoder, spark_decoders
from events.values import KeyValue, TableVersion

__all__ = [
    "CHANGE_INTENTS",
    "CONTROL_INTENTS",
    "GENESIS_HASH",
    "HEADER_LENGTH",
    "ChainBroken",
    "Command",
    "Committed",
    "DecodeError",
    "EncodeError",
    "Event",
    "Intent",
    "KeyAbsent",
    "KeyAtVersion",
    "KeyPresent",
    "KeyValue",
    "Long",
    "MetalogError",
    "Mutation",
    "MutationOp",
    "Record",
    "Rejected",
    "Reply",
    "Requirement",
    "SchemaKind",
    "SchemaStore",
    "SchemaVersion",
    "SparkDecoder",
    "TableVersion",
    "UnknownCodec",
    "UnknownSchema",
    "ValueEquals",
    "canonical_body",
    "decode_command",
    "decode_command_dict",
    "decode_event",
    "decode_event_dict",
    "decode_reply",
    "decode_reply_dict",
    "default_store",
    "encode_command",
    "encode_command_dict",
    "encode_event",
    "encode_event_dict",
    "encode_reply",
    "encode_reply_dict",
    "event_hash",
    "from_avro_dict",
    "seal",
    "spark_decoders",
    "to_avro_dict",
    "verify_chain",
    "verify_encoded_chain",
]
