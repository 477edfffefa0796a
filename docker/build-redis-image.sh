#!/usr/bin/env bash
# Builds a Redis container image from Debian packages, for machines that cannot pull the
# official `redis` image (no registry). The image behaves like the official one where
# dbq-bench relies on it: a `redis-server` CMD whose extra arguments (`--requirepass …`,
# `--appendfsync always`) reach the server, data in /data, port 6379.
#
# Usage: docker/build-redis-image.sh [--force] [TAG]      (default TAG: dbq-bench-redis:7.0)
# Needs docker, debootstrap (installed with apt-get when missing) and a Debian mirror (DEBIAN_MIRROR,
# else the one this machine's apt uses, else debootstrap's default); runs
# itself under sudo when not root. Prints one line per step; the full log of the build is
# kept in $DBQ_IMAGE_BUILD_LOG (default /tmp/dbq-bench-redis-image-build.log).
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag=${1:-dbq-bench-redis:7.0}
suite=${DEBIAN_SUITE:-bookworm}
here=$(cd "$(dirname "$0")" && pwd)
log=${DBQ_IMAGE_BUILD_LOG:-/tmp/dbq-bench-redis-image-build.log}

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag already present (use --force to rebuild)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "error: building the image needs root (debootstrap, chroot), and sudo is not installed" >&2; exit 1; }
  again=("$@"); [ "$force" = 0 ] || again=(--force "$@")
  exec sudo --preserve-env=DEBIAN_SUITE,DEBIAN_MIRROR,DBQ_IMAGE_BUILD_LOG "$0" "${again[@]}"
fi

# shellcheck source=debian-rootfs.sh
. "$here/debian-rootfs.sh"
make_rootfs dbq-redis-rootfs

install_package redis-server "mkdir -p /data && chown redis:redis /data"
import_image "$here/redis-entrypoint.sh" redis /data 6379 redis-server /data
