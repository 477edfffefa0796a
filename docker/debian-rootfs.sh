# Sourced by the image builds (docker/build-*-image.sh): logging, and
# a minimal Debian root filesystem made with debootstrap in a temporary directory that is
# removed on exit, and the steps every image shares (install_package, import_image). Expects
# $tag, $log and $suite; sets $root. The packages come from
# $DEBIAN_MIRROR when set, else from the Debian mirror this machine's apt uses, else from
# debootstrap's own default.

: >"$log"
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

# make_rootfs PREFIX: debootstrap $suite into a new /tmp/PREFIX.XXXXXX, as $root.
make_rootfs() {
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
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $1
    apt-get clean
    rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*
    $2
  " >>"$log" 2>&1 || fail "apt-get install $1"
  umount "$root/proc"
  rm -f "$root/usr/sbin/policy-rc.d"
}

# import_image ENTRYPOINT USER WORKDIR PORTS CMD: installs ENTRYPOINT as the image's
# docker-entrypoint.sh and imports $root as $tag, running CMD as USER in WORKDIR.
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
    - "$tag" >>"$log" 2>&1 || fail "docker import"
  echo "image: built $tag (full log: $log)"
}
