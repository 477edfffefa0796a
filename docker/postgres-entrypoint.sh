#!/bin/sh
# Entrypoint of the locally built PostgreSQL image: a small subset of the official image's
# docker-entrypoint.sh. Initialises PGDATA on first start, then runs the server in the
# foreground with any extra arguments (e.g. `-c shared_buffers=256MB`).
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"

if [ "${1:-}" = "postgres" ]; then shift; set -- postgres "$@"; elif [ "${1#-}" != "${1:-}" ]; then set -- postgres "$@"; fi

if [ "${1:-}" = "postgres" ]; then
  shift
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
    if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != "trust" ]; then
      echo "error: set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust)" >&2
      exit 1
    fi
    pwfile=$(mktemp)
    printf '%s\n' "${POSTGRES_PASSWORD:-postgres}" >"$pwfile"
    initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
      --auth-local=trust --auth-host="$auth" >/dev/null
    rm -f "$pwfile"
    echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != "postgres" ]; then
      echo "CREATE DATABASE \"$POSTGRES_DB\";" | postgres --single -D "$PGDATA" -j postgres >/dev/null
    fi
    echo "dbq-bench entrypoint: initialised $PGDATA"
  fi
  exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
