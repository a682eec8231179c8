"""What a command may hold: the sizes and ranges `producers.decide.rules.validate` enforces.

One place for every limit (docs/limits.md shows them to users). The numeric
ranges are chosen so that every sum the leader makes from a value (the next
epoch, the next id, a region id) still fits an Avro `long`.
"""

from events.base import LONG_MAX

NAME_MAX_CHARS = 64
"""The longest name (catalog, schema, table, partition, column), as in MySQL/TiDB identifiers."""

NAME_FORBIDDEN = "/"
"""The character no name may hold: it separates the segments of a metadata key."""

TEXT_MAX_CHARS = 256
"""The longest command id, actor, reply address or option key."""

ATTRIBUTES_MAX_CHARS = 4096
"""The longest TiDB attribute string (`k=v[,k1=v1…]`)."""

COLUMNS_MAX = 4096
"""The most columns a table may have, MySQL's hard limit."""

PARTITIONS_MAX = 8192
"""The most partitions a table may have, MySQL's and TiDB's limit."""

REGIONS_MAX = 1024
"""The most regions a new table may have; each becomes a route entry and label keys."""

DATANODES_MAX = REGIONS_MAX
"""The most datanodes a table's regions are placed on (more would never be used)."""

DATANODE_ID_MAX = 2**32 - 1
"""The highest datanode id (GreptimeDB's u32); ids start at 0."""

TABLE_ID_MAX = 2**31 - 1
"""The highest table or partition id; ids start at 0.

A region id is `(table_id << 32) | region_number` (GreptimeDB), and it must
still fit a signed Avro `long`: so a table id has 31 bits.
"""

REGION_ID_MAX = LONG_MAX
"""The highest region id: `TABLE_ID_MAX << 32` plus the largest region number."""

EPOCH_MAX = 2**62
"""The highest publication epoch (Publish, AdvanceStableEpoch); epochs start at 1.

In auto mode a change gets `stable_epoch + 1`: far below `LONG_MAX` even at the top.
"""

VERSION_MAX = LONG_MAX
"""The highest expected (resource) version a command may carry."""
