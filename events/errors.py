"""The root of every metalog error, and the contract's own errors."""


class MetalogError(Exception):
    """Root of every metalog error."""


class DecodeError(MetalogError):
    """Bytes that are not one valid single-object-encoded record of the expected kind."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot decode record: {reason}")


class UnknownSchema(DecodeError):
    """The record names a writer schema (by fingerprint) that this store does not hold."""

    def __init__(self, fingerprint: bytes) -> None:
        self.fingerprint = fingerprint
        super().__init__(
            f"writer schema fingerprint {fingerprint.hex()} is unknown: upgrade metalog to a "
            "version that ships this schema under events/schemas/, or route the record to the DLQ"
        )


class EncodeError(MetalogError):
    """A model or dict that the current Avro schema cannot encode."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"cannot encode record: {reason}")


class ChainBroken(MetalogError):
    """The hash chain of a catalog's events does not verify at `resource_version`."""

    def __init__(self, resource_version: int, reason: str) -> None:
        self.resource_version = resource_version
        self.reason = reason
        super().__init__(f"hash chain broken at resource_version {resource_version}: {reason}")


class UnknownCodec(MetalogError):
    """`METALOG_CODEC` names no Avro reader and writer that the codec has."""

    def __init__(self, value: str, known: tuple[str, ...]) -> None:
        self.value = value
        super().__init__(
            f"METALOG_CODEC={value!r} is not one of {', '.join(known)}: set one of them "
            "(fastavro for plain fastavro) or unset it for the default"
        )
