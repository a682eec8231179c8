"""Local paths in a metalog Spark session: written by Hadoop's file system without a forked
process per file (`streaming.spark.settings.FORKLESS_FS`), with the same results."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from streaming.spark.settings import configure


@contextmanager
def processes_started(spark: SparkSession, where: Path) -> Iterator[list[str]]:
    """The commands the driver JVM starts within the block (a Java Flight Recording of
    `jdk.ProcessStart`), filled in when the block ends."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    recording = jvm.jdk.jfr.Recording()
    recording.enable("jdk.ProcessStart")
    recording.start()
    started: list[str] = []
    try:
        yield started
    finally:
        recording.stop()
        path = jvm.java.io.File(str(where)).toPath()
        recording.dump(path)
        recording.close()
        events = jvm.jdk.jfr.consumer.RecordingFile.readAllEvents(path)
        started += [str(event.getString("command")) for event in events]


def test_a_stateful_micro_batch_to_delta_starts_no_process_per_file(
        spark: SparkSession, tmp_path: Path) -> None:
    configure(spark)  # the projection's state store (RocksDB) and Delta confs
    source, sink = str(tmp_path / "source"), str(tmp_path / "sink")
    spark.range(100).selectExpr("id % 10 AS k", "id").write.format("delta").save(source)
    stream = spark.readStream.format("delta").load(source).dropDuplicates(["k"])
    with processes_started(spark, tmp_path / "recording.jfr") as started:
        query = (stream.writeStream.format("delta").trigger(availableNow=True)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).start(sink))
        query.awaitTermination()
    keys = sorted(row.k for row in spark.read.format("delta").load(sink).collect())
    assert keys == list(range(10))
    # What a micro-batch writes: its checkpoint, its state's changelog, a Delta commit.
    assert (tmp_path / "checkpoint" / "offsets" / "0").is_file()
    assert list((tmp_path / "checkpoint" / "state").rglob("*.changelog"))
    assert (Path(sink) / "_delta_log" / "00000000000000000000.json").is_file()
    # Spark itself may still start a process now and then (`rm -rf` of a local state
    # directory, RocksDB's one look at the C library), but none per file written.
    assert not [command for command in started if command.split()[0] in ("chmod", "readlink")]


def test_statuses_permissions_and_links_are_hadoops_without_a_process(
        spark: SparkSession, tmp_path: Path) -> None:
    jvm = spark._jvm  # type: ignore[attr-defined]
    hadoop = jvm.org.apache.hadoop.fs
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    ours = hadoop.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    theirs = hadoop.LocalFileSystem()  # Hadoop's own, forking chmod and readlink
    theirs.initialize(jvm.java.net.URI("file:///"), conf)
    target, link = tmp_path / "target", tmp_path / "link"
    link.symlink_to(target)

    def status(fs: object, path: Path) -> tuple[object, ...]:
        found = fs.getFileLinkStatus(hadoop.Path(path.as_uri()))  # type: ignore[attr-defined]
        return (found.isSymlink(), found.isFile(), found.getLen(),
                str(found.getSymlink()) if found.isSymlink() else None)

    modes = (0o640, 0o755, 0o600)
    with processes_started(spark, tmp_path / "recording.jfr") as started:
        stream = ours.create(hadoop.Path(target.as_uri()))
        stream.write(bytearray(b"metalog"))
        stream.close()
        seen = []
        for mode in modes:
            ours.setPermission(hadoop.Path(target.as_uri()),
                               hadoop.permission.FsPermission.createImmutable(mode))
            seen.append(os.stat(target).st_mode & 0o7777)
        statuses = [status(ours, path) for path in (target, tmp_path)]
    assert seen == list(modes)
    assert statuses == [status(theirs, path) for path in (target, tmp_path)]
    assert status(ours, link) == status(theirs, link)  # a real link: Hadoop's own answer
    assert started == []
