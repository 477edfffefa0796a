#!/usr/bin/env bash
# Builds a MariaDB container image from Debian packages, for machines that cannot pull the
# official `mariadb` image (no registry). The image behaves like the official one where
# dbq-bench relies on it: MARIADB_ROOT_PASSWORD (root may connect from anywhere with it),
# extra arguments starting with `-` (`--innodb-buffer-pool-size=256M`) passed to mariadbd,
# data in /var/lib/mysql, port 3306.
#
# Usage: docker/build-mariadb-image.sh [--force] [VERSION | TAG]
#   VERSION: the MariaDB release series, each from the Debian release that packages it:
#   10.11 (bookworm, the default) or 11.8 (trixie). The image is tagged
#   dbq-bench-mariadb:VERSION; a TAG (name:VERSION) names it otherwise, its tag the version.
# Needs docker, debootstrap (installed with apt-get when missing) and a Debian mirror (DEBIAN_MIRROR,
# else the one this machine's apt uses, else debootstrap's default); runs
# itself under sudo when not root. Prints one line per step; the full log of the build is
# kept in $DBQ_IMAGE_BUILD_LOG (default /tmp/dbq-bench-mariadb-image-build.log).
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag=${1:-dbq-bench-mariadb:10.11}
releases="10.11=bookworm 11.8=trixie"
here=$(cd "$(dirname "$0")" && pwd)
log=${DBQ_IMAGE_BUILD_LOG:-/tmp/dbq-bench-mariadb-image-build.log}
# shellcheck source=debian-rootfs.sh
. "$here/debian-rootfs.sh"
pick_release dbq-bench-mariadb "$releases" "$tag"

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag already present (use --force to rebuild)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "error: building the image needs root (debootstrap, chroot), and sudo is not installed" >&2; exit 1; }
  again=("$@"); [ "$force" = 0 ] || again=(--force "$@")
  exec sudo --preserve-env=DEBIAN_SUITE,DEBIAN_MIRROR,DBQ_IMAGE_BUILD_LOG "$0" "${again[@]}"
fi

make_rootfs dbq-mariadb-rootfs

# No service start inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"

step "installing mariadb-server in the image"
mount -t proc proc "$root/proc"
chroot "$root" /bin/sh -c "
  set -e
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o Acquire::Check-Valid-Until=false update -qq
  apt-get install -y -qq --no-install-recommends mariadb-server
  apt-get clean
  rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*
  rm -rf /var/lib/mysql && mkdir -p /var/lib/mysql /run/mysqld
  chown -R mysql:mysql /var/lib/mysql /run/mysqld
" >>"$log" 2>&1 || fail "apt-get install mariadb-server"
umount "$root/proc"
rm -f "$root/usr/sbin/policy-rc.d"
install -m 0755 "$here/mariadb-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"

step "importing as $tag"
tar -C "$root" -c . 2>>"$log" | docker import \
  --change "ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/bin" \
  --change "ENV LANG=C.UTF-8" \
  --change "USER mysql" \
  --change "EXPOSE 3306" \
  --change "VOLUME /var/lib/mysql" \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
  --change 'CMD ["mariadbd"]' \
  - "$tag" >>"$log" 2>&1 || fail "docker import"
echo "image: built $tag (full log: $log)"
