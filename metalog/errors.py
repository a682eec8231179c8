"""Errors of the local stack and the command line."""

from events.errors import MetalogError


class StackError(MetalogError):
    """The local Kafka broker could not be started, reached or stopped."""


class AuditError(MetalogError):
    """An audit command cannot do what was asked (which catalog, no checkpoint to keep)."""


class StatusError(MetalogError):
    """`metalog status` was given something that is not a metrics endpoint."""
