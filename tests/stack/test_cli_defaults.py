"""Every command that talks to Kafka takes its cluster from the environment by default."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import pytest

from metalog.cli.commands import build_parser


def _commands(parser: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, Any]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}".strip())
        elif "--bootstrap" in action.option_strings:
            yield path, action.default


def test_every_command_with_a_bootstrap_option_defaults_to_metalog_bootstrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("METALOG_BOOTSTRAP", "kafka.example:9093")
    defaults = dict(_commands(build_parser()))
    assert "leader" in defaults and "serve" in defaults and "follow" in defaults
    assert {name: default for name, default in defaults.items()
            if default != "kafka.example:9093"} == {}  # fmt: skip
