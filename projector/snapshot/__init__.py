"""Snapshot files: Parquet columns of an image, written and loaded (pyarrow)."""
