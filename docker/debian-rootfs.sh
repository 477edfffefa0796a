# Sourced by the image builds (build-postgres-image.sh, build-mariadb-image.sh): logging, and
# a minimal Debian root filesystem made with debootstrap in a temporary directory that is
# removed on exit. Expects $tag, $log, $suite and $mirror; sets $root.

: >"$log"
step() { echo "image: $*"; echo "== $*" >>"$log"; }
fail() {
  echo "error: building $tag failed at: $1 (last lines of $log below)" >&2
  tail -15 "$log" | sed 's/^/  | /' >&2
  exit 1
}

# make_rootfs PREFIX: debootstrap $suite into a new /tmp/PREFIX.XXXXXX, as $root.
make_rootfs() {
  if ! command -v debootstrap >/dev/null; then
    step "installing debootstrap"
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; } >>"$log" 2>&1 \
      || fail "apt-get install debootstrap"
  fi
  root=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$root"
  trap cleanup_rootfs EXIT
  step "debootstrap $suite (minbase) from $mirror"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >>"$log" 2>&1 || fail "debootstrap"
}

cleanup_rootfs() {
  for m in proc sys dev/pts; do umount "$root/$m" 2>/dev/null || true; done
  rm -rf "$root"
}
