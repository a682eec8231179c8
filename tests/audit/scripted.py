"""The scripted workload of the history and diff tests: a table's whole life, stated by hand."""

from __future__ import annotations

from events.commands import (
    AlterTable,
    DropTable,
    ExchangePartition,
    RecoverTable,
    RenameTable,
    SetAttributes,
    TruncateTable,
)
from producers.leader.local import LocalCatalog
from tests.domain.builders import command, create, local


def lifecycle() -> LocalCatalog:
    """rv 1 elected; 2 create t (id 1); 3 rename t → u; 4 truncate u (id 2); 5 create p
    (id 3, partitions p0 = 4, p1 = 5); 6 exchange p.p0 with u (u takes id 4); 7 set u's
    attributes; 8 alter u (by `bob`); 9 drop u; 10 recover u."""
    catalog = local()
    catalog.elect("leader-a")
    catalog.submit(create("t"))
    catalog.submit(command(RenameTable, table_name="t", new_table_name="u"))
    catalog.submit(command(TruncateTable, table_name="u"))
    catalog.submit(create("p", partitions=("p0", "p1")))
    catalog.submit(command(ExchangePartition, table_name="p", partition_name="p0",
                           other_schema_name="public", other_table_name="u"))  # fmt: skip
    catalog.submit(command(SetAttributes, table_name="u", attributes="k=v"))
    catalog.submit(command(AlterTable, table_name="u", set_options={"k": "v"}, actor="bob"))
    catalog.submit(command(DropTable, table_name="u"))
    catalog.submit(command(RecoverTable, table_name="u"))
    return catalog


EXPECTED_U = [
    # (rv, table id after, version after, statement); a new id takes `u` above the
    # version the id before leaves it at (issue 50: versions go on per name)
    (2, 1, 1, "CREATE TABLE public.t"),
    (3, 1, 2, "RENAME TABLE public.t TO public.u"),
    (4, 2, 4, "TRUNCATE TABLE public.u"),
    (6, 4, 6, "ALTER TABLE public.p EXCHANGE PARTITION p0 WITH TABLE public.u"),
    (7, 4, 7, "ALTER TABLE public.u ATTRIBUTES='k=v'"),
    (8, 4, 8, "ALTER TABLE public.u SET OPTIONS 'k=v'"),
    (9, 4, 9, "DROP TABLE public.u"),
    (10, 4, 10, "RECOVER TABLE public.u"),
]
"""Every change of `public.u` (born `public.t`), as the script above makes it."""
