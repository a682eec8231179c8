"""The ``metalog`` command line: one module per command group (`metalog.cli.commands`)."""

from metalog.cli.commands import main

__all__ = ["main"]
