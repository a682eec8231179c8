"""The service side: `MetadataClient` and the channels it sends commands through."""

from producers.client.client import MetadataClient

__all__ = ["MetadataClient"]
