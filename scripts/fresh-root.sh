#!/usr/bin/env bash
# Runs the README's two commands as a new user would meet them: in a fresh
# Debian root (debootstrap --variant=minbase) of the release asked for, as root,
# from a clean clone of this checkout's HEAD (committed files only), in a shell
# with an empty environment (no XDG_RUNTIME_DIR, no DISPLAY). Prints each step's
# wall time and each command's exit status; the root is left in DIR to look at.
#   bash scripts/fresh-root.sh bookworm|trixie DIR [probe|test|both]
# DIR must not exist or be empty. The mirror is the first deb.debian.org-style
# URI in this machine's apt sources (EXTMEM_MIRROR overrides). Run as root;
# debootstrap is installed when missing. /proc, /sys, /dev, /dev/pts and a
# private /dev/shm are mounted in the root while the commands run, then unmounted.
# Exit: 0 every command asked for passed; 1 one of them failed; 2 bad usage;
# 3 the root could not be made (debootstrap, clone or mounts).
set -euo pipefail

usage() { echo "usage: bash scripts/fresh-root.sh bookworm|trixie DIR [probe|test|both]" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
release=$1 root=$2 which=${3:-both}
case "$release" in bookworm|trixie) ;; *) echo "fresh-root: release '$release' is not supported: bookworm or trixie" >&2; exit 2 ;; esac
case "$which" in probe|test|both) ;; *) echo "fresh-root: '$which' is not accepted: probe, test or both" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "fresh-root: debootstrap and chroot need root" >&2; exit 2; }
if [ -e "$root" ] && [ -n "$(ls -A "$root" 2>/dev/null)" ]; then
  echo "fresh-root: $root is not empty; give a new directory (the root must be fresh)" >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$src" rev-parse HEAD)
[ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] ||
  echo "fresh-root: note: uncommitted changes in $src are not in the clone (HEAD $rev is)" >&2

mirror=${EXTMEM_MIRROR:-}
if [ -z "$mirror" ]; then
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    mirror=$(awk '/^(URIs:|deb) / && $2 ~ /^https?:\/\/.*\/debian\/?$/ {print $2; exit}' "$f")
    [ -z "$mirror" ] || break
  done
fi
mirror=${mirror:-http://deb.debian.org/debian}

stamp() { date +%s; }
took() { echo "$(( $(stamp) - $1 )) s"; }
fail_root() { echo "fresh-root: $*" >&2; exit 3; }

if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null || fail_root "cannot install debootstrap"
fi
mkdir -p "$root"
root=$(cd "$root" && pwd)

t=$(stamp)
debootstrap --variant=minbase "$release" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  fail_root "debootstrap $release from $mirror failed; log: $root.debootstrap.log"
echo "fresh-root: debootstrap --variant=minbase $release $mirror: $(took "$t")"

t=$(stamp)
git clone -q --no-hardlinks "$src" "$root/root/extmem" || fail_root "git clone $src"
git -C "$root/root/extmem" checkout -q --detach "$rev" || fail_root "checkout $rev"
echo "fresh-root: clean clone of $rev in /root/extmem: $(took "$t")"

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mnt() {  # mnt TARGET mount-arguments...
  local target=$1
  shift
  mkdir -p "$target"
  mount "$@" "$target" || fail_root "mount $* $target"
  mounted+=("$target")
}
mnt "$root/proc" -t proc proc
mnt "$root/sys" -t sysfs sysfs
mnt "$root/dev" --bind /dev
mnt "$root/dev/pts" --bind /dev/pts
mnt "$root/dev/shm" -t tmpfs -o mode=1777 shm  # POSIX shared memory of the probe's routes, not the host's
cp -L /etc/resolv.conf "$root/etc/resolv.conf"  # apt-get in the root reaches the mirror

# A login shell's environment on a fresh machine: nothing set but the basics.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM="${TERM:-dumb}" bash -c "cd /root/extmem && $1"
}

status=0
results=()
run_command() {
  local cmd=$1 log=$root.$2.log code=0 t
  t=$(stamp)
  echo "fresh-root: $release: $cmd (output also in $log)"
  set +e
  in_root "$cmd" 2>&1 | tee "$log"
  code=${PIPESTATUS[0]}
  set -e
  results+=("$release: $cmd: exit $code in $(took "$t")")
  echo "fresh-root: ${results[-1]}"
  [ "$code" = 0 ] || status=1
}
[ "$which" = test ] || run_command "bash scripts/probe.sh" probe
[ "$which" = probe ] || run_command "bash scripts/test.sh" test
printf 'fresh-root: %s\n' "${results[@]}"
exit "$status"
