"""Errors of the Spark jobs."""

from events.errors import MetalogError


class ProjectionError(MetalogError):
    """The projection cannot run: a misconfigured source, a broken table, a failed query."""


class OldCheckpoint(ProjectionError):
    """The streaming checkpoint or the tables were written by an older projection that this
    one cannot resume (its fold kept no state store, or its `changes` held rendered rows:
    CHANGELOG)."""
