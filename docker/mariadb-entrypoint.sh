#!/bin/sh
# Entrypoint of the locally built MariaDB image: a small subset of the official image's
# docker-entrypoint.sh. Initialises /var/lib/mysql on first start with a root account that
# may connect from anywhere with MARIADB_ROOT_PASSWORD, then runs mariadbd in the foreground
# with any extra arguments (e.g. `--innodb-buffer-pool-size=256M`).
set -eu
datadir=/var/lib/mysql

if [ "${1#-}" != "${1:-}" ]; then set -- mariadbd "$@"; fi

if [ "${1:-}" = "mariadbd" ]; then
  shift
  if [ ! -d "$datadir/mysql" ]; then
    if [ -z "${MARIADB_ROOT_PASSWORD:-}" ]; then
      echo "error: set MARIADB_ROOT_PASSWORD" >&2
      exit 1
    fi
    mariadb-install-db --no-defaults --datadir="$datadir" --auth-root-authentication-method=normal \
      --skip-test-db >/dev/null
    # The password is the container's own (a random one per run): it is quoted for SQL, and
    # the bootstrap reads it from stdin, never from the command line.
    pw=$(printf '%s' "$MARIADB_ROOT_PASSWORD" | sed "s/'/''/g")
    mariadbd --no-defaults --datadir="$datadir" --bootstrap --skip-grant-tables=0 >/dev/null 2>&1 <<SQL
FLUSH PRIVILEGES;
CREATE USER 'root'@'%' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;
ALTER USER 'root'@'localhost' IDENTIFIED BY '$pw';
SQL
    echo "dbq-bench entrypoint: initialised $datadir"
  fi
  exec mariadbd --no-defaults --datadir="$datadir" --bind-address=0.0.0.0 --port=3306 \
    --socket=/run/mysqld/mysqld.sock --skip-name-resolve "$@"
fi
exec "$@"
