"""Readers of the projection's Delta tables without a JVM: deltalake and DuckDB."""
