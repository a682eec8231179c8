"""SQL: TiDB's statements parsed with sqlglot and translated into commands."""
