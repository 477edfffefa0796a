"""Prints chancy's schema as its migrations make it: the part of schema.sql above the marker.

chancy ships no SQL file; it migrates a database from Python. This runs Chancy.migrate()
(default plugins) in a fresh schema of the server libpq's variables name, dumps it with
pg_dump --schema-only, takes out the schema's name, the dump's session settings and
comments, adds the migration versions chancy records, and drops the schema again.

    PGHOST=… PGPORT=… PGUSER=… python print_schema.py
"""

import asyncio
import os
import re
import subprocess
import sys
import uuid

import psycopg
from chancy import Chancy

SCHEMA = f"dbq_chancy_schema_{uuid.uuid4().hex[:8]}"


async def migrate():
    async with Chancy("") as app:
        await app.migrate()


def dump(env):
    text = subprocess.run(
        [os.environ.get("PG_DUMP", "pg_dump"), "--schema-only", "--no-owner",
         "--no-privileges", "--no-comments", "-n", SCHEMA],
        env=env, check=True, capture_output=True, text=True,
    ).stdout
    kept = [
        re.sub(rf"\b{SCHEMA}\.", "", line)
        for line in text.split("\n")
        if not line.startswith(("SET ", "SELECT pg_catalog.set_config", "--", "\\restrict",
                                "\\unrestrict", f"CREATE SCHEMA {SCHEMA};"))
    ]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip() + "\n"


def main():
    with psycopg.connect("", autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        try:
            env = dict(os.environ, PGOPTIONS=f"-c search_path={SCHEMA}")
            os.environ["PGOPTIONS"] = env["PGOPTIONS"]
            asyncio.run(migrate())
            body = dump(env)
            versions = conn.execute(
                f"SELECT version_of, version FROM {SCHEMA}.chancy_schema_version ORDER BY version_of"
            ).fetchall()
        finally:
            conn.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
    sys.stdout.write(body + "\n")
    for package, version in versions:
        sys.stdout.write(f"INSERT INTO chancy_schema_version VALUES ('{package}', {version});\n")


if __name__ == "__main__":
    main()
