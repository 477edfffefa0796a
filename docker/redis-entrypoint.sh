#!/bin/sh
# Entrypoint of the locally built Redis image: the part of the official image's
# docker-entrypoint.sh that dbq-bench relies on. Arguments starting with `-` are options for
# redis-server (`--appendfsync everysec`); the server runs in the foreground in /data, where
# its append-only file goes, listening on every interface.
set -eu
if [ "${1#-}" != "${1:-}" ]; then set -- redis-server "$@"; fi
if [ "${1:-}" = "redis-server" ]; then
  shift
  cd /data
  exec redis-server --bind 0.0.0.0 --protected-mode no --dir /data "$@"
fi
exec "$@"
