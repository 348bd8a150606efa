#!/usr/bin/env bash
# Builds tctl, Temporal's legacy CLI, for the tctl acceptance test (test/integration/tctl.test.ts) and the
# tctl runbook commands (docs/TCTL.md):
#   scripts/build-tctl.sh
# Idempotent: when tctl is already there (TCTL_PATH, PATH, or the Go bin dir) it only prints its path.
# Otherwise: go install github.com/temporalio/tctl/cmd/tctl@v1.18.4 into the Go bin dir
# (GOBIN, else $(go env GOPATH)/bin, usually ~/go/bin). Needs Go and the Go module proxy.
# Where the proxy will not serve the tctl module (here it answers 403 "This module version is not
# available"), set TCTL_PATH to a tctl binary obtained some other way.
# v1.18.4 reports itself as "tctl version 1.18.0" (the version string was not bumped after 1.18.0).
# tctl reached end of support on 2025-09-30; its successor is the `temporal` CLI (docs/TCTL.md).
set -euo pipefail

version=v1.18.4
module=github.com/temporalio/tctl/cmd/tctl

found() {
  echo "tctl: $1"
  "$1" --version 2>/dev/null | head -n 1 || true
  exit 0
}

if [[ -n "${TCTL_PATH:-}" ]]; then
  if [[ -x "$TCTL_PATH" ]]; then found "$TCTL_PATH"; fi
  echo "error: TCTL_PATH=$TCTL_PATH is not an executable file" >&2
  exit 1
fi
if command -v tctl >/dev/null 2>&1; then found "$(command -v tctl)"; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: tctl is not installed and Go is not on PATH, so it cannot be built." >&2
  echo "  Install Go (https://go.dev/dl/, or Debian's golang-go) and re-run, or set TCTL_PATH to a tctl binary." >&2
  exit 1
fi

gobin="$(go env GOBIN)"
[[ -n "$gobin" ]] || gobin="$(go env GOPATH)/bin"
if [[ -x "$gobin/tctl" ]]; then found "$gobin/tctl"; fi

started=$(date +%s)
echo "== go install $module@$version (into $gobin; takes a few minutes the first time)"
if go install "$module@$version"; then
  echo "== built in $(( $(date +%s) - started )) s"
  found "$gobin/tctl"
fi
echo "error: tctl $version could not be built with go install (output above)." >&2
echo "  Here the Go module proxy refuses the tctl module (403 \"This module version is not available\")." >&2
echo "  Set TCTL_PATH to a tctl binary you have; tctl is end of support (2025-09-30) and the temporal CLI" >&2
echo "  covers the same commands (docs/TCTL.md). The tctl test skips itself without a binary." >&2
exit 1
