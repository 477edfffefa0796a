# Sourced by the image builds (docker/build-*-image.sh): logging, the version to build and
# its Debian release (pick_release), and
# a minimal Debian root filesystem made with debootstrap in a temporary directory that is
# removed on exit, and the steps every image shares (install_package, import_image). Expects
# $tag, $log and $suite; sets $root. The packages come from
# $DEBIAN_MIRROR when set, else from the Debian mirror this machine's apt uses, else from
# debootstrap's own default.

step() { echo "image: $*"; echo "== $*" >>"$log"; }
fail() {
  echo "error: building $tag failed at: $1 (last lines of $log below)" >&2
  tail -15 "$log" | sed 's/^/  | /' >&2
  exit 1
}

# The Debian mirror this machine's apt is configured with (deb822 sources or the one-line
# format), printed when there is one.
apt_mirror() {
  cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '/^(URIs:|deb) / && $2 !~ /security/ { print $2; exit }' || true
}

# pick_release IMAGE RELEASES ARG: which version to build, from ARG: a version (`17`), or a
# tag whose tag is one (`dbq-bench-postgres:17`). RELEASES lists the versions Debian packages
# and the release each comes from (`15=bookworm 17=trixie`). Sets $version, $tag (IMAGE:version
# for a bare version) and $suite, the Debian release (DEBIAN_SUITE overrides it); refuses a
# version Debian does not package, naming the ones it does.
pick_release() {
  case $3 in
    *:*) tag=$3; version=${3##*:} ;;
    *) tag=$1:$3; version=$3 ;;
  esac
  suite=
  for release in $2; do
    if [ "${release%%=*}" = "$version" ]; then suite=${release#*=}; fi
  done
  if [ -z "$suite" ]; then
    echo "error: $(basename "$0"): version '$version' (from '$3'): no Debian release here packages it; allowed: ${2//=/ from }" >&2
    exit 2
  fi
  suite=${DEBIAN_SUITE:-$suite}
}

# make_rootfs PREFIX: debootstrap $suite into a new /tmp/PREFIX.XXXXXX, as $root.
make_rootfs() {
  : >"$log"
  mirror=${DEBIAN_MIRROR:-$(apt_mirror)}
  if ! command -v debootstrap >/dev/null; then
    step "installing debootstrap"
    { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debootstrap; } >>"$log" 2>&1 \
      || fail "apt-get install debootstrap"
  fi
  root=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$root"
  trap cleanup_rootfs EXIT
  step "debootstrap $suite (minbase) from ${mirror:-the default mirror of debootstrap}"
  debootstrap --variant=minbase "$suite" "$root" ${mirror:+"$mirror"} >>"$log" 2>&1 || fail "debootstrap"
}

cleanup_rootfs() {
  for m in proc sys dev/pts; do umount "$root/$m" 2>/dev/null || true; done
  rm -rf "$root"
}

# The images' apt reads a release's index even when its Release file's Valid-Until has
# passed (`Acquire::Check-Valid-Until=false`): a mirror kept as a snapshot serves sid's,
# valid for a week, long after; the signatures are still checked.

# install_package PACKAGE SETUP: installs PACKAGE in $root with apt-get (no service started
# inside the chroot), then runs the shell commands SETUP there, and cleans apt's caches.
install_package() {
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  step "installing $1 in the image"
  mount -t proc proc "$root/proc"
  chroot "$root" /bin/sh -c "
    set -e
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o Acquire::Check-Valid-Until=false update -qq
    apt-get install -y -qq --no-install-recommends $1
    apt-get clean
    rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*
    $2
  " >>"$log" 2>&1 || fail "apt-get install $1"
  umount "$root/proc"
  rm -f "$root/usr/sbin/policy-rc.d"
}

# import_image ENTRYPOINT USER WORKDIR PORTS CMD [VOLUME]: installs ENTRYPOINT as the image's
# docker-entrypoint.sh and imports $root as $tag, running CMD as USER in WORKDIR. VOLUME, as
# the engine's official image declares it, puts the server's data on a volume of the host's
# filesystem rather than in the container's layer (whose storage driver may flush at half the
# speed: fuse-overlayfs did).
import_image() {
  install -m 0755 "$1" "$root/usr/local/bin/docker-entrypoint.sh"
  step "importing as $tag"
  tar -C "$root" -c . 2>>"$log" | docker import \
    --change "ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/bin" \
    --change "ENV LANG=C.UTF-8" \
    --change "USER $2" \
    --change "WORKDIR $3" \
    --change "EXPOSE $4" \
    --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
    --change "CMD [\"$5\"]" \
    ${6:+--change "VOLUME $6"} \
    - "$tag" >>"$log" 2>&1 || fail "docker import"
  echo "image: built $tag (full log: $log)"
}
