#!/usr/bin/env bash
# Builds a PostgreSQL container image from Debian packages, for machines that cannot pull the
# official `postgres` image (no registry). The image behaves like the official one where
# dbq-bench relies on it: POSTGRES_PASSWORD / POSTGRES_USER / POSTGRES_DB /
# POSTGRES_HOST_AUTH_METHOD, a `postgres` CMD whose extra arguments (`-c key=value`) reach the
# server, data in /var/lib/postgresql/data (a volume, as the official image declares it), port 5432.
#
# Usage: docker/build-postgres-image.sh [--force] [VERSION | TAG]
#   VERSION: the PostgreSQL major version, each from the Debian release that packages it:
#   15 (bookworm, the default), 17 (trixie) or 18 (sid). The image is tagged
#   dbq-bench-postgres:VERSION; a TAG (name:VERSION) names it otherwise, its tag the version.
# Needs docker, debootstrap (installed with apt-get when missing) and a Debian mirror (DEBIAN_MIRROR,
# else the one this machine's apt uses, else debootstrap's default); runs
# itself under sudo when not root. Prints one line per step; the full log of the build is
# kept in $DBQ_IMAGE_BUILD_LOG (default /tmp/dbq-bench-image-build.log).
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag=${1:-dbq-bench-postgres:15}
releases="15=bookworm 17=trixie 18=sid"
here=$(cd "$(dirname "$0")" && pwd)
log=${DBQ_IMAGE_BUILD_LOG:-/tmp/dbq-bench-image-build.log}
# shellcheck source=debian-rootfs.sh
. "$here/debian-rootfs.sh"
pick_release dbq-bench-postgres "$releases" "$tag"
pg_major=$version

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag already present (use --force to rebuild)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "error: building the image needs root (debootstrap, chroot), and sudo is not installed" >&2; exit 1; }
  again=("$@"); [ "$force" = 0 ] || again=(--force "$@")
  exec sudo --preserve-env=DEBIAN_SUITE,DEBIAN_MIRROR,DBQ_IMAGE_BUILD_LOG "$0" "${again[@]}"
fi

make_rootfs dbq-pg-rootfs

# No cluster on install and no service start inside the chroot.
mkdir -p "$root/etc/postgresql-common"
echo "create_main_cluster = false" >"$root/etc/postgresql-common/createcluster.conf"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"

step "installing postgresql-$pg_major in the image"
mount -t proc proc "$root/proc"
chroot "$root" /bin/sh -c "
  set -e
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o Acquire::Check-Valid-Until=false update -qq
  apt-get install -y -qq --no-install-recommends postgresql-$pg_major
  apt-get clean
  rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*
  mkdir -p /var/lib/postgresql/data /var/run/postgresql
  chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
  chmod 700 /var/lib/postgresql/data
" >>"$log" 2>&1 || fail "apt-get install postgresql-$pg_major"
umount "$root/proc"
rm -f "$root/usr/sbin/policy-rc.d"
install -m 0755 "$here/postgres-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"

step "importing as $tag"
tar -C "$root" -c . 2>>"$log" | docker import \
  --change "ENV PATH=/usr/lib/postgresql/$pg_major/bin:/usr/local/bin:/usr/bin:/bin" \
  --change "ENV PGDATA=/var/lib/postgresql/data" \
  --change "ENV LANG=C.UTF-8" \
  --change "USER postgres" \
  --change "EXPOSE 5432" \
  --change "VOLUME /var/lib/postgresql/data" \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
  --change 'CMD ["postgres"]' \
  - "$tag" >>"$log" 2>&1 || fail "docker import"
echo "image: built $tag (full log: $log)"
