#!/usr/bin/env bash
# Builds tctl, Temporal's legacy CLI, for the tctl acceptance test (test/integration/tctl.test.ts, which
# runs this on first use) and the tctl runbook commands (docs/TCTL.md):
#   scripts/build-tctl.sh        # prints the binary's path as its last line of stdout
# The binary is the Go module ops/tctl (tctl v1.18.0's command, pinned by our go.mod: the Go module proxy
# serves v1.18.0 but refuses v1.18.1-v1.18.4, so `go install .../cmd/tctl@v1.18.4` fails), built with
# `go build` into the user's cache, $XDG_CACHE_HOME/expiry-reminder/tctl (else ~/.cache/...), under a name
# that changes with ops/tctl's files: idempotent, and an edit of the module builds a new one.
# The first build takes 2-3 minutes on 2 cores (95-180 s measured; module downloads aside). Needs Go 1.25 or newer.
# TCTL_PATH set to a tctl binary skips the build and uses that one.
# tctl reached end of support on 2025-09-30; its successor is the `temporal` CLI (docs/TCTL.md).
set -euo pipefail

source_dir="$(cd "$(dirname "$0")/../ops/tctl" && pwd)"

if [[ -n "${TCTL_PATH:-}" ]]; then
  if [[ -x "$TCTL_PATH" && -f "$TCTL_PATH" ]]; then
    echo "$TCTL_PATH"
    exit 0
  fi
  echo "error: TCTL_PATH=$TCTL_PATH is not an executable file" >&2
  exit 1
fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: tctl is built with Go, and go is not on PATH: install Go 1.25 or newer (https://go.dev/dl/)," >&2
  echo "  or set TCTL_PATH to a tctl binary." >&2
  exit 1
fi

hash="$(cd "$source_dir" && cat go.mod go.sum main.go | sha256sum | cut -c1-12)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/expiry-reminder/tctl"
binary="$cache/tctl-$hash"
if [[ -x "$binary" ]]; then
  echo "$binary"
  exit 0
fi

mkdir -p "$cache"
# Built aside and renamed into place, so a second build running meanwhile never leaves half a binary.
staging="$binary.$$"
trap 'rm -f "$staging"' EXIT
started=$(date +%s)
echo "== building tctl v1.18.0 (ops/tctl) into $cache: first run only, 2-3 minutes" >&2
(cd "$source_dir" && go build -buildvcs=false -o "$staging" .) >&2
mv "$staging" "$binary"
echo "== built in $(($(date +%s) - started)) s: $("$binary" --version 2>/dev/null | head -n 1)" >&2
echo "$binary"
