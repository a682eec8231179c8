"""The event contract: Avro schemas, pydantic models, codec and hash chain.

Import each name from its module (`events.codec`, `events.event`, ...): importing
the package loads nothing, so the pure fold does not load the codec.
"""
