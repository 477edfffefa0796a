#!/usr/bin/env bash
# Builds a RabbitMQ container image from Debian packages, for machines that cannot pull the
# official `rabbitmq` image (no registry). The image behaves like the official one where
# dbq-bench relies on it: a `rabbitmq-server` CMD whose extra arguments (`-rabbit key value`)
# reach the broker, data in /var/lib/rabbitmq, port 5672.
#
# Usage: docker/build-rabbitmq-image.sh [--force] [TAG]      (default TAG: dbq-bench-rabbitmq:3.10)
# Needs docker, debootstrap (installed with apt-get when missing) and a Debian mirror (DEBIAN_MIRROR,
# else the one this machine's apt uses, else debootstrap's default); runs
# itself under sudo when not root. Prints one line per step; the full log of the build is
# kept in $DBQ_IMAGE_BUILD_LOG (default /tmp/dbq-bench-rabbitmq-image-build.log).
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag=${1:-dbq-bench-rabbitmq:3.10}
suite=${DEBIAN_SUITE:-bookworm}
here=$(cd "$(dirname "$0")" && pwd)
log=${DBQ_IMAGE_BUILD_LOG:-/tmp/dbq-bench-rabbitmq-image-build.log}

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag already present (use --force to rebuild)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "error: building the image needs root (debootstrap, chroot), and sudo is not installed" >&2; exit 1; }
  exec sudo --preserve-env=DEBIAN_SUITE,DEBIAN_MIRROR,DBQ_IMAGE_BUILD_LOG "$0" "$@"
fi

# shellcheck source=debian-rootfs.sh
. "$here/debian-rootfs.sh"
make_rootfs dbq-rabbitmq-rootfs

# No service start inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"

step "installing rabbitmq-server in the image"
mount -t proc proc "$root/proc"
chroot "$root" /bin/sh -c "
  set -e
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends rabbitmq-server
  apt-get clean
  rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*
  mkdir -p /var/lib/rabbitmq && chown -R rabbitmq:rabbitmq /var/lib/rabbitmq
" >>"$log" 2>&1 || fail "apt-get install rabbitmq-server"
umount "$root/proc"
rm -f "$root/usr/sbin/policy-rc.d"
install -m 0755 "$here/rabbitmq-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"

step "importing as $tag"
tar -C "$root" -c . 2>>"$log" | docker import \
  --change "ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/bin" \
  --change "ENV LANG=C.UTF-8" \
  --change "USER rabbitmq" \
  --change "WORKDIR /var/lib/rabbitmq" \
  --change "EXPOSE 5672" \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
  --change 'CMD ["rabbitmq-server"]' \
  - "$tag" >>"$log" 2>&1 || fail "docker import"
echo "image: built $tag (full log: $log)"
