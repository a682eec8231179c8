"""The root of every metalog error, and the contract's own errors."""


class MetalogError(Exception):
    """Root of every metalog error."""
