#!/usr/bin/env bash
# The fresh-machine check: runs the README's two commands (bash scripts/demo.sh, bash
# scripts/test.sh) as root in a minimal Debian 12 root made by debootstrap, on a clean clone of
# the committed HEAD (or KILN_FRESH_REF). Passes only if both exit 0 and the demo prints its test
# accuracy. Needs root (debootstrap, mount, chroot). See docs/ci.md.
#
# Environment:
#   KILN_FRESH_REF=<commit>   the commit to check (default HEAD; uncommitted work never counts)
#   KILN_FRESH_KEEP=1         keep the root (unmounted) for debugging; its path is printed
#   KILN_FRESH_REFRESH=1      rebuild the cached root tarball with debootstrap
#   KILN_FRESH_MIRROR=<url>   the Debian mirror (default: the one the host's apt sources use)
#   KILN_FRESH_WORKDIR=<dir>  where the root is unpacked (default /var/tmp)
#   KILN_FRESH_LOG_DIR=<dir>  where the phase logs go (default ~/.cache/kiln/fresh-root/logs)
#   KILN_FRESH_TIMEOUT=<s>    limit of each of the demo and test phases (default 3600: a hang guard;
#                             a loaded 2-core machine took 32 min for the demo)
#   KILN_FRESH_CPU=native|avx2|both  avx2: the test phase runs as on an AVX2-only CPU (AMD Zen
#                             3): oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA) and Kiln's own loops to
#                             x86-64-v3 (KILN_CPU_ISA=baseline); both: the README's test command on
#                             this CPU, then every test again as on the AVX2 one (ctest on the same
#                             build, no rebuild); .ci/run sets both (default native)
#   CI=true                   passed into the root: the build treats warnings as errors
#   KILN_FRESH_CMD=<cmd>      debugging aid: run <cmd> in the clone instead of the README's two
#                             commands (the result then says nothing about the README)
set -euo pipefail

suite=bookworm
variant=minbase
repo=$(cd "$(dirname "$0")/.." && pwd)
t_start=$SECONDS

say() { echo "check_fresh_machine: $*"; }
die() { echo "check_fresh_machine: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, mount, chroot)"

# --- host tools -----------------------------------------------------------------------------------
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap (a host tool of this check)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

# --- the Debian mirror the host's apt sources use --------------------------------------------------
# Prints "URI SUITE" for every enabled deb source, from sources.list (one-line format) and
# sources.list.d/*.sources (deb822).
host_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' "$f" | awk '$1 == "deb" {
      i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      print $i, $(i + 1) }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: stanzas separated by blank lines; fields Types, URIs, Suites, Enabled.
    awk 'function flush() {
           if (types ~ /(^| )deb( |$)/ && enabled != "no")
             for (u = 1; u <= nu; u++) for (s = 1; s <= ns; s++) print uris[u], suites[s]
           types = ""; enabled = ""; nu = 0; ns = 0 }
         /^[ \t]*#/ { next }
         /^[ \t]*$/ { flush(); next }
         { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "") }
         key == "types" { types = $0 }
         key == "enabled" { enabled = tolower($0) }
         key == "uris" { nu = split($0, uris, " ") }
         key == "suites" { ns = split($0, suites, " ") }
         END { flush() }' "$f"
  done
}
sources=$(host_sources)
pick_uri() { awk -v s="$1" '$2 == s { sub(/\/+$/, "", $1); print $1; exit }' <<<"$sources"; }
mirror=${KILN_FRESH_MIRROR:-$(pick_uri "$suite")}
[ -n "$mirror" ] || die "no '$suite' deb source in the host's apt sources; set KILN_FRESH_MIRROR"
case "$mirror" in
  http://* | https://*) ;;
  *) die "the host's '$suite' source is $mirror, not an http(s) mirror; set KILN_FRESH_MIRROR" ;;
esac
updates_uri=$(pick_uri "$suite-updates")
security_uri=$(pick_uri "$suite-security")
arch=$(dpkg --print-architecture)

# --- the cached root tarball -----------------------------------------------------------------------
cache_dir="${HOME:-/root}/.cache/kiln/fresh-root"
key=$(printf '%s %s %s %s' "$suite" "$variant" "$arch" "$mirror" | sha256sum | cut -c1-12)
tarball="$cache_dir/$suite-$variant-$arch-$key.tar.gz"
log_dir="${KILN_FRESH_LOG_DIR:-$cache_dir/logs}"
mkdir -p "$cache_dir" "$log_dir"
rm -f "$log_dir"/{root,setup,demo,test,cmd}.log

# --- the root, its mounts, and the cleanup on every exit path --------------------------------------
work_parent="${KILN_FRESH_WORKDIR:-/var/tmp}"
work=$(realpath "$(mktemp -d "$work_parent/kiln-fresh.XXXXXX")")
root="$work/root"
mkdir "$root"

mounts_under_root() {  # mount points at or below $root, deepest first
  awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}
cleanup() {
  local rc=$? p pids=() m t=$SECONDS
  trap - EXIT INT TERM HUP
  set +e
  # Processes left in the root (a phase that timed out) hold its mounts: end them, by id.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && pids+=("${p#/proc/}")
  done
  if [ ${#pids[@]} -gt 0 ]; then
    echo "check_fresh_machine: ending processes left in the root: ${pids[*]}" >&2
    kill -TERM "${pids[@]}" 2>/dev/null; sleep 2; kill -KILL "${pids[@]}" 2>/dev/null; sleep 1
  fi
  for m in $(mounts_under_root); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "check_fresh_machine: cannot unmount $m" >&2
  done
  if [ -n "$(mounts_under_root)" ]; then
    echo "check_fresh_machine: mounts remain under $root; not removing it" >&2
    [ "$rc" -ne 0 ] || rc=1
  elif [ "${KILN_FRESH_KEEP:-0}" = 1 ]; then
    echo "check_fresh_machine: kept the root (unmounted) at $root"
  else
    rm -rf --one-file-system "$work"
    echo "check_fresh_machine: removed the root ($((SECONDS - t))s)"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mount_vfs() {
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys"
  mount --bind /dev "$root/dev"
  mount --make-private "$root/dev"   # what is mounted below it never reaches the host's /dev
  mount --bind /dev/pts "$root/dev/pts"
  mount --make-private "$root/dev/pts"
  mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"   # MPI's shared memory
}

# A command as root in the chroot, with a login shell's clean environment (nothing of the host's).
in_root=(chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb)
# CI's warnings-as-errors, for both commands alike (a change of it between them would rebuild).
[ "${CI:-}" = "true" ] && in_root+=(CI=true)

phase_times=()
phase() {  # phase NAME SECONDS
  phase_times+=("$(printf '%-12s %3dm%02ds' "$1" $(($2 / 60)) $(($2 % 60)))")
  say "phase $1: $(($2 / 60))m$(($2 % 60))s"
}
print_times() {
  say "time per phase:"
  printf '  %s\n' "${phase_times[@]}"
  printf '  %-12s %3dm%02ds\n' total $(((SECONDS - t_start) / 60)) $(((SECONDS - t_start) % 60))
}
fail_with_log() {  # fail_with_log LOG MESSAGE
  echo "----- last 60 lines of $1 -----" >&2
  tail -n 60 "$1" >&2
  echo "-----" >&2
  print_times >&2
  die "$2 (whole log: $1)"
}

# Phase 1: the root, from the cache or from debootstrap.
t=$SECONDS
if [ -f "$tarball" ] && [ "${KILN_FRESH_REFRESH:-0}" != 1 ]; then
  say "unpacking the cached $suite $variant root ($tarball) into $root"
  tar -xzpf "$tarball" --numeric-owner -C "$root" || die "cannot unpack $tarball"
  phase unpack $((SECONDS - t))
else
  say "debootstrap --variant=$variant $suite from $mirror into $root (log: $log_dir/root.log)"
  debootstrap --variant="$variant" --arch="$arch" "$suite" "$root" "$mirror" >"$log_dir/root.log" 2>&1 ||
    fail_with_log "$log_dir/root.log" "debootstrap failed"
  # Leftover mounts of a debootstrap would go into the tarball: there must be none.
  [ -z "$(mounts_under_root)" ] || die "debootstrap left mounts under $root"
  rm -f "$tarball.part.$$"
  if ! { tar -czpf "$tarball.part.$$" --numeric-owner -C "$root" . && mv "$tarball.part.$$" "$tarball"; }; then
    rm -f "$tarball.part.$$"
    die "cannot write $tarball"
  fi
  say "cached the root as $tarball ($(du -h "$tarball" | cut -f1))"
  phase debootstrap $((SECONDS - t))
fi

# Phase 2: the machine's setup, which is no part of the project. Copied from the host: only
# /etc/resolv.conf (the machine's DNS, so the README's commands can reach apt and npm) and the
# machine's local CA certificates (this project's machines trust them; a new one has them). The
# root gets the host's Debian mirror as its apt sources, as a new machine here would.
t=$SECONDS
{
  echo "deb $mirror $suite main"
  [ -z "$updates_uri" ] || echo "deb $updates_uri $suite-updates main"
  [ -z "$security_uri" ] || echo "deb $security_uri $suite-security main"
} >"$root/etc/apt/sources.list"
rm -f "$root/etc/resolv.conf"   # may be a dangling link in a bare root
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount_vfs
set +e
(
  set -e
  echo "== apt sources of the root"
  cat "$root/etc/apt/sources.list"
  if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
    echo "== the machine's local CA certificates"
    ls "$root/usr/local/share/ca-certificates"
  fi
  "${in_root[@]}" bash -c 'set -e
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends ca-certificates
    update-ca-certificates'
) >"$log_dir/setup.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 0 ] || fail_with_log "$log_dir/setup.log" "setting up the root failed"
phase setup $((SECONDS - t))

# Phase 3: a clean clone of the commit, as /root/kiln in the root.
t=$SECONDS
ref=${KILN_FRESH_REF:-HEAD}
commit=$(git -C "$repo" rev-parse --verify --quiet "$ref^{commit}") || die "no commit '$ref' in $repo"
git clone --quiet --no-hardlinks --no-checkout "$repo" "$root/root/kiln"
git -C "$root/root/kiln" checkout --quiet --detach "$commit"
say "clean clone of $(git -C "$repo" log -1 --format='%h %s' "$commit" | cut -c1-90) in $root/root/kiln"
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] || [ -n "${KILN_FRESH_REF:-}" ] ||
  say "note: the working tree has uncommitted changes; they are not part of this check"
phase clone $((SECONDS - t))

run_phase() {  # run_phase NAME CMD: CMD in the clone, inside the root, its output in NAME.log
  local name=$1 cmd=$2 t=$SECONDS rc=0
  say "running '$cmd' in the root (log: $log_dir/$name.log)"
  timeout --kill-after=30 "${KILN_FRESH_TIMEOUT:-3600}" \
    "${in_root[@]}" bash -lc "cd /root/kiln && $cmd" >"$log_dir/$name.log" 2>&1 </dev/null &
  wait $! || rc=$?   # in the background, so that a signal to this script is handled at once
  phase "$name" $((SECONDS - t))
  [ "$rc" -eq 0 ] || fail_with_log "$log_dir/$name.log" "'$cmd' exited $rc in the fresh root"
}

if [ -n "${KILN_FRESH_CMD:-}" ]; then
  run_phase cmd "$KILN_FRESH_CMD"
  print_times
  say "KILN_FRESH_CMD passed (not the README's commands: no verdict on them)"
  exit 0
fi

run_phase demo "bash scripts/demo.sh"
accuracy=$(grep -Eio 'test accuracy[^0-9]{0,4}[0-9]+(\.[0-9]+)?%?' "$log_dir/demo.log" | tail -n 1) ||
  fail_with_log "$log_dir/demo.log" "the demo exited 0 but printed no test accuracy"
say "demo: $accuracy"
# The demo installs only what it needs; chromium is for one test (install_deps.sh --test).
if "${in_root[@]}" dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  die "the demo installed chromium, a test-only package (scripts/install_deps.sh without --test)"
fi
readonly avx2_env="export ONEDNN_MAX_CPU_ISA=AVX2 KILN_CPU_ISA=baseline"
case "${KILN_FRESH_CPU:-native}" in
  native | both) run_phase test "bash scripts/test.sh" ;;
  avx2) run_phase test "$avx2_env; bash scripts/test.sh" ;;
  *) die "KILN_FRESH_CPU: expected native, avx2 or both, received '$KILN_FRESH_CPU'" ;;
esac
summary=$(grep -E 'tests passed' "$log_dir/test.log" | tail -n 1) || summary="(no ctest summary)"
# The report page must really be opened in Chromium there, not skipped.
grep -Eq 'KilnReportTest\.PageRendersInHeadlessChromium \.*[ ]+Passed' "$log_dir/test.log" ||
  fail_with_log "$log_dir/test.log" "KilnReportTest.PageRendersInHeadlessChromium did not pass (skipped: no chromium?)"
say "test: $summary"
if [ "${KILN_FRESH_CPU:-native}" = both ]; then
  run_phase test_avx2 "$avx2_env; ctest --test-dir build --output-on-failure -j \"\$(nproc)\""
  say "test as on an AVX2-only CPU: $(grep -E 'tests passed' "$log_dir/test_avx2.log" | tail -n 1)"
fi
print_times
say "PASS: on a fresh Debian 12 root both README commands exit 0; $accuracy"
