# Sourced by the image builds (build-postgres-image.sh, build-mariadb-image.sh): logging, and
# a minimal Debian root filesystem made with debootstrap in a temporary directory that is
# removed on exit. Expects $tag, $log and $suite; sets $root. The packages come from
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
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; } >>"$log" 2>&1 \
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
