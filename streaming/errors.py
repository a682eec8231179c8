"""Errors of the Spark jobs."""

from events.errors import MetalogError


class ProjectionError(MetalogError):
    """The projection cannot run: a misconfigured source, a broken table, a failed query."""
