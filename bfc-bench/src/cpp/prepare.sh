#!/bin/sh
# Copies TensorFlow's bfc_allocator.{h,cc} from a TensorFlow source tree into the build
# directory, checks that they are those of the pinned commit, and applies our header patch
# to the copy (never to the source tree). Called by the Makefile; see README.md.
# Usage: prepare.sh TF_SRC BUILD_DIR
# Exit status: 0 ready, 2 missing or unexpected sources (nothing is built from them).
# TF_SRC_ANY_VERSION=1 builds from other versions anyway, with a warning.
set -eu
PIN=5263072435bff96f5d4bcea137cfb3755dca8f7f
# sha256 of third_party/xla/xla/tsl/framework/bfc_allocator.cc at $PIN.
CC_SHA256=2352b174da37b0f7ae8c3914ad242643e0376dfedbcda8ddddb2459e91e63ce9
# sha256 of bfc_allocator.h at $PIN: not recorded (README.md, "Checking the sources").
H_SHA256=
REL=third_party/xla/xla/tsl/framework
HERE=$(cd "$(dirname "$0")" && pwd)

say() { printf 'prepare: %s\n' "$*" >&2; }
need_sources() {
  say "$1"
  say "TF_SRC must be a TensorFlow source tree at commit $PIN"
  say "(a git checkout or the GitHub archive of that commit); see $HERE/README.md"
  exit 2
}

[ $# -eq 2 ] || { say "usage: prepare.sh TF_SRC BUILD_DIR"; exit 2; }
TF_SRC=$1
BUILD=$2
[ -n "$TF_SRC" ] || need_sources "TF_SRC is not set"
[ -d "$TF_SRC" ] || need_sources "TF_SRC=$TF_SRC is not a directory"
for f in bfc_allocator.cc bfc_allocator.h; do
  [ -f "$TF_SRC/$REL/$f" ] || need_sources "$TF_SRC/$REL/$f: no such file"
done

problems=0
mismatch() {
  if [ "${TF_SRC_ANY_VERSION:-0}" = 1 ]; then
    say "WARNING: $1"
    say "WARNING: building anyway (TF_SRC_ANY_VERSION=1): the answers and timings are not those of $PIN"
  else
    say "$1"
    problems=1
  fi
}

# A git checkout whose top is TF_SRC (not a directory inside some other repository).
top=$(git -C "$TF_SRC" rev-parse --show-toplevel 2>/dev/null || true)
if [ -n "$top" ] && [ "$top" = "$(cd "$TF_SRC" && pwd -P)" ]; then
  head=$(git -C "$TF_SRC" rev-parse HEAD 2>/dev/null || echo none)
  if [ "$head" != "$PIN" ]; then
    mismatch "TF_SRC is a git checkout at $head, not at $PIN"
  elif ! git -C "$TF_SRC" diff --quiet HEAD -- "$REL/bfc_allocator.cc" "$REL/bfc_allocator.h"; then
    mismatch "TF_SRC is at $PIN but $REL/bfc_allocator.{h,cc} have local changes"
  else
    say "TF_SRC is a git checkout at $PIN, bfc_allocator.{h,cc} unchanged"
  fi
fi

sha() { sha256sum "$1" | cut -d' ' -f1; }
cc_sha=$(sha "$TF_SRC/$REL/bfc_allocator.cc")
h_sha=$(sha "$TF_SRC/$REL/bfc_allocator.h")
if [ "$cc_sha" = "$CC_SHA256" ]; then
  say "bfc_allocator.cc: sha256 $cc_sha, as at $PIN"
else
  mismatch "bfc_allocator.cc: sha256 $cc_sha, expected $CC_SHA256 (the file at $PIN)"
fi
if [ -z "$H_SHA256" ]; then
  say "bfc_allocator.h: sha256 $h_sha (no checksum recorded for $PIN; see README.md)"
elif [ "$h_sha" = "$H_SHA256" ]; then
  say "bfc_allocator.h: sha256 $h_sha, as at $PIN"
else
  mismatch "bfc_allocator.h: sha256 $h_sha, expected $H_SHA256 (the file at $PIN)"
fi
if [ "$problems" -ne 0 ]; then
  say "refusing to build from other sources (TF_SRC_ANY_VERSION=1 overrides; see README.md)"
  exit 2
fi

# Copy, then patch the copy; replace the build's files only when they change, so that make
# rebuilds only what changed.
mkdir -p "$BUILD/include/xla/tsl/framework" "$BUILD/tf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$TF_SRC/$REL/bfc_allocator.cc" "$tmp/bfc_allocator.cc"
cp "$TF_SRC/$REL/bfc_allocator.h" "$tmp/bfc_allocator.h"
for p in "$HERE"/patches/bfc_allocator.h.*.diff; do
  if ! patch -s --no-backup-if-mismatch -r - "$tmp/bfc_allocator.h" "$p" >&2; then
    say "$p does not apply to $TF_SRC/$REL/bfc_allocator.h"
    exit 2
  fi
done
install_if_changed() {
  cmp -s "$1" "$2" 2>/dev/null || cp "$1" "$2"
}
install_if_changed "$tmp/bfc_allocator.cc" "$BUILD/tf/bfc_allocator.cc"
install_if_changed "$tmp/bfc_allocator.h" "$BUILD/include/xla/tsl/framework/bfc_allocator.h"
