#!/usr/bin/env bash
# Builds the container image of the `kafka` engine: Tansu, a Kafka-API broker built from
# crates.io (scripts/install-tansu), in a minimal Debian root filesystem, for machines that
# reach no image registry and whose Debian has no Kafka package. The container runs
# `tansu broker …` (the provider gives the listener and the advertised host port), port 9092;
# its storage is in memory, so it declares no volume.
#
# Usage: docker/build-kafka-image.sh [--force] [TAG]      (default TAG: dbq-bench-kafka:tansu-0.6.0)
# Needs docker, cargo (to build Tansu when target/tansu/bin/tansu is missing), debootstrap
# (installed with apt-get when missing) and a Debian mirror (DEBIAN_MIRROR, else the one this
# machine's apt uses); runs the image part under sudo when not root. The full log of the
# image build is kept in $DBQ_IMAGE_BUILD_LOG (default /tmp/dbq-bench-kafka-image-build.log).
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag=${1:-dbq-bench-kafka:tansu-0.6.0}
suite=${DEBIAN_SUITE:-bookworm}
here=$(cd "$(dirname "$0")" && pwd)
log=${DBQ_IMAGE_BUILD_LOG:-/tmp/dbq-bench-kafka-image-build.log}

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag already present (use --force to rebuild)"
  exit 0
fi
tansu=$here/../target/tansu/bin/tansu
[ -x "$tansu" ] || "$here/../scripts/install-tansu"
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "error: building the image needs root (debootstrap, chroot), and sudo is not installed" >&2; exit 1; }
  again=("$@"); [ "$force" = 0 ] || again=(--force "$@")
  exec sudo --preserve-env=DEBIAN_SUITE,DEBIAN_MIRROR,DBQ_IMAGE_BUILD_LOG "$0" "${again[@]}"
fi

# shellcheck source=debian-rootfs.sh
. "$here/debian-rootfs.sh"
make_rootfs dbq-kafka-rootfs

step "copying tansu into the image"
install -m 0755 "$tansu" "$root/usr/local/bin/tansu"
import_image "$here/kafka-entrypoint.sh" nobody /tmp 9092 tansu
