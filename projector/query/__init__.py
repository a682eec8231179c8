"""Queries over a published image: Arrow relations of its keys, DuckDB on top."""
