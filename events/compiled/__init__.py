"""The codec's fast paths: Avro readers, writers and shape converters compiled from a schema.

`write` writes the bytes fastavro writes and `read` reads what fastavro reads,
each about twice as fast, from Python source generated once per schema
(`source`); `shape` converts between the models' dict shape and fastavro's.
`events.kind_codec` uses them unless `METALOG_CODEC=fastavro` (then only `shape`).
The audit reads a few fields of many records through `partial` (a record's leading
fields), `trailer` (its last fields, from the end) and `pattern` (a regular expression
of its leading fields for `re`), compiled from the same schemas.
"""
