"""Prints dramatiq-pg's own schema as dramatiq-pg installs it (its `generate_init_sql`'s
reading of its schema.sql, with the prefix `dramatiq_`), the schema's name taken out: the
harness installs it in the run's schema. The test compares schema.sql with this."""

import sys

from dramatiq_pg.schema import process_psql_lines
import dramatiq_pg, os

path = os.path.join(os.path.dirname(dramatiq_pg.__file__), "schema.sql")
with open(path) as f:
    lines = process_psql_lines(f, "dbq_run_schema", "dramatiq_")
    text = "".join(l for l in lines if not l.startswith('CREATE SCHEMA'))
sys.stdout.write(text.replace('"dbq_run_schema".', "").lstrip("\n"))
