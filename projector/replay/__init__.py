"""Replay: the catalog as it was at a resource_version or a time, from a snapshot and the log."""
