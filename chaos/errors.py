"""Errors of the fault harness."""

from events.errors import MetalogError


class ChaosError(MetalogError):
    """The fault harness could not do what was asked."""


class GoToolchainMissing(ChaosError):
    """`go` is not on PATH, so the proxy and the checker cannot be built."""

    def __init__(self) -> None:
        super().__init__(
            "the Go toolchain (`go`, 1.24+) is not on PATH: the fault proxy (Toxiproxy) and "
            "the checker (Porcupine) are built from chaos/go with it; install Go from "
            "https://go.dev/dl/ and put its bin/ on PATH"
        )


class GoBuildFailed(ChaosError):
    """`go build` of a chaos binary failed; its own words are in the message."""


class ProxyError(ChaosError):
    """Toxiproxy refused a request or did not start."""


class CheckerError(ChaosError):
    """The checker could not read a history (its own words are in the message)."""
