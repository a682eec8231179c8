"""Errors of the Spark jobs."""

from events.errors import MetalogError


class ProjectionError(MetalogError):
    """The projection cannot run: a misconfigured source, a broken table, a failed query."""


class OldCheckpoint(ProjectionError):
    """The streaming checkpoint or the tables were written by an older projection that this
    one cannot resume (its fold kept no state store, or its `changes` held rendered rows:
    CHANGELOG)."""


class JarsError(MetalogError):
    """The JVM jars could not be resolved (Maven missing, offline, bad artifact)."""


class SparkStartError(MetalogError):
    """Spark's driver JVM did not start (its own words are in Spark's log file)."""
