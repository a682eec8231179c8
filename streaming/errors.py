"""Errors of the Spark jobs."""

from events.errors import MetalogError


class ProjectionError(MetalogError):
    """The projection cannot run: a misconfigured source, a broken table, a failed query."""


class OldCheckpoint(ProjectionError):
    """The streaming checkpoint was written by the projection before its fold moved into the
    state store (CHANGELOG): it cannot be resumed."""
