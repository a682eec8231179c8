"""What a streaming checkpoint holds, read through Hadoop's file system (any URI Spark reads).

A checkpoint directory has `offsets/<batch id>` (written when a batch is
planned: a version line, the batch's metadata, then one line per source with
the offsets the batch ends at) and `commits/<batch id>` (written when the batch
is done).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


def _path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """Hadoop's file system of `path`, and the path."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    return hadoop_path.getFileSystem(conf), hadoop_path


def exists(spark: SparkSession, path: str) -> bool:
    """Whether a file or directory exists."""
    fs, hadoop_path = _path(spark, path)
    return bool(fs.exists(hadoop_path))


def committed_offsets(spark: SparkSession, checkpoint: str) -> str | None:
    """Where the checkpoint's last committed batch ended: its (single) source's offsets, as
    the source wrote them (Kafka: `{"topic": {"0": 42}}`); None before a batch committed."""
    fs, commits = _path(spark, f"{checkpoint.rstrip('/')}/commits")
    if not fs.exists(commits):
        return None
    batches = [
        int(name)
        for name in (status.getPath().getName() for status in fs.listStatus(commits))
        if name.isdigit()
    ]
    if not batches:
        return None
    lines = spark.read.text(f"{checkpoint.rstrip('/')}/offsets/{max(batches)}").collect()
    return str(lines[2][0])
