#!/usr/bin/env bash
# Installs Debian's chromium for the Web UI test (test/integration/web-ui.test.ts), which drives it
# headless with playwright-core. Idempotent: does nothing when the browser is already there.
#
#   bash scripts/install-chromium.sh
#
# CHROMIUM_PATH names another browser binary; when it is set and executable there is nothing to do.
# playwright-core never downloads a browser of its own (the network here only reaches package
# registries), so the browser comes from Debian's package.
set -euo pipefail

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"

if [[ -x "$chromium" ]]; then
  echo "chromium: $chromium is there ($("$chromium" --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi

if [[ -n "${CHROMIUM_PATH:-}" ]]; then
  echo "chromium: CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file; unset it to install Debian's chromium" >&2
  exit 1
fi

if [[ "$(id -u)" -ne 0 ]]; then
  echo "chromium: /usr/bin/chromium is missing and installing it needs root;" >&2
  echo "  run: sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium" >&2
  echo "  (or point CHROMIUM_PATH at a Chromium binary)" >&2
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: /usr/bin/chromium is missing and there is no apt-get to install it (not Debian?);" >&2
  echo "  install a Chromium and point CHROMIUM_PATH at it" >&2
  exit 1
fi

echo "chromium: installing Debian's chromium package"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null

if [[ ! -x /usr/bin/chromium ]]; then
  echo "chromium: apt-get finished but /usr/bin/chromium is not there" >&2
  exit 1
fi
echo "chromium: installed $(/usr/bin/chromium --version 2>/dev/null || echo '/usr/bin/chromium')"
