"""Why a command is rejected: one typed error per rule, carried by `Rejected`."""

from events.errors import MetalogError


class CommandRejected(MetalogError):
    """A command was refused and nothing was written.

    `code` is the class name; it travels in the `Rejected` reply so the client
    raises the same type. Conflicts keep the current value.
    """

    def __init__(
        self,
        message: str,
        *,
        current_version: int | None = None,
        current_resource_version: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.current_version = current_version
        self.current_resource_version = current_resource_version

    @property
    def code(self) -> str:
        """The name the reply carries."""
        return type(self).__name__


class InvalidAttributes(CommandRejected):
    """A TiDB attribute string (`k=v[,k1=v1…]`) is malformed."""
