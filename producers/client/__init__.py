"""The service side: `MetadataClient` and the channels it sends commands through."""
