"""How a failed projection query is told to the user (no Spark needed: Spark's own messages)."""

from streaming.errors import OldCheckpoint, ProjectionError
from streaming.spark.projection import ProjectionConfig, failed

CONFIG = ProjectionConfig(bootstrap="127.0.0.1:1", topic="metalog.events", delta_dir="/data/t",
                          checkpoint="/data/cp")  # fmt: skip
QUERY = "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "


def test_a_checkpoint_of_a_projection_without_a_state_store_is_an_old_checkpoint() -> None:
    error = failed(CONFIG, RuntimeError(
        QUERY + "[STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY] Cannot restart ..."))
    assert isinstance(error, OldCheckpoint) and "/data/cp" in str(error)
    assert "new --checkpoint" in str(error)


def test_a_checkpoint_of_another_fold_operator_is_an_old_checkpoint() -> None:
    error = failed(CONFIG, RuntimeError(
        QUERY + "[STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA] Streaming stateful "
        "operator name does not match with the operator in state metadata.\nStateful operators "
        "in the metadata: [(OperatorId: 0 -> OperatorName: transformWithStateInPySparkExec)]"))
    assert isinstance(error, OldCheckpoint)


def test_a_checkpoint_of_the_fold_keyed_by_catalog_is_an_old_checkpoint() -> None:
    error = failed(CONFIG, RuntimeError(  # what a checkpoint of 2026-11-28's fold gave
        QUERY + "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match "
        "existing state key schema."))
    assert isinstance(error, OldCheckpoint) and "new --checkpoint" in str(error)


def test_any_other_failure_is_one_line_naming_the_topic_and_the_cause() -> None:
    error = failed(CONFIG, RuntimeError(
        QUERY + "[KAFKA_DATA_LOSS] Some data may have been lost.\n=== Streaming Query ===\n"
        "Current State: ACTIVE\nLogical Plan:\nProject [...]"))
    assert type(error) is ProjectionError
    assert "\n" not in str(error)
    assert "metalog.events" in str(error) and "KAFKA_DATA_LOSS" in str(error)
    assert "Logical Plan" not in str(error)
