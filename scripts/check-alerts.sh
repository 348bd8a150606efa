#!/usr/bin/env bash
# Validates the Prometheus alerting rules and their unit tests; run from CI or by hand:
#   scripts/check-alerts.sh
# 1. promtool check rules  ops/prometheus/alerts.yml
# 2. promtool test rules   ops/prometheus/alerts.test.yml
# 3. promtool check config ops/prometheus/prometheus.yml
# 4. every runbook_url anchor in alerts.yml is a heading of the runbook it points to
# promtool comes from PATH; when it is missing and we run as root, Debian's `prometheus` package is
# installed (it ships promtool). The rules need promtool >= 2.29 (present_over_time).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

rules=ops/prometheus/alerts.yml
tests=ops/prometheus/alerts.test.yml
config=ops/prometheus/prometheus.yml

if ! command -v promtool >/dev/null 2>&1; then
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "promtool not found; installing Debian's prometheus package" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  else
    echo "error: promtool not found on PATH." >&2
    echo "  Install it (Debian/Ubuntu: sudo apt-get install --no-install-recommends prometheus," >&2
    echo "  or a release from https://github.com/prometheus/prometheus/releases) and re-run;" >&2
    echo "  run as root on Debian and this script installs it itself." >&2
    exit 1
  fi
fi

echo "== $(promtool --version 2>&1 | head -n 1)"

echo "== promtool check rules $rules"
promtool check rules "$rules"

echo "== promtool test rules $tests"
promtool test rules "$tests"

echo "== promtool check config $config"
promtool check config "$config"

echo "== runbook anchors"
base='https://github.com/pin-platform/expiry-reminder/blob/main/'
missing=0
checked=0
while IFS= read -r url; do
  checked=$((checked + 1))
  path="${url#"$base"}"
  file="${path%%#*}"
  anchor="${path#*#}"
  if [[ "$url" != "$base"* || "$path" != *"#"* ]]; then
    echo "  $url: expected ${base}<file>#<anchor>" >&2
    missing=$((missing + 1))
    continue
  fi
  if [[ ! -f "$file" ]]; then
    echo "  $url: $file does not exist" >&2
    missing=$((missing + 1))
    continue
  fi
  # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
  if ! sed -n 's/^#\{1,6\}[[:space:]]\{1,\}//p' "$file" \
      | tr '[:upper:]' '[:lower:]' \
      | sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g' \
      | grep -qxF -- "$anchor"; then
    echo "  $url: no heading with anchor #$anchor in $file" >&2
    missing=$((missing + 1))
  fi
done < <(grep -o 'runbook_url: *[^ ]*' "$rules" | sed 's/^runbook_url: *//')

if [[ "$checked" -eq 0 ]]; then
  echo "  no runbook_url found in $rules" >&2
  exit 1
fi
if [[ "$missing" -gt 0 ]]; then
  echo "  $missing of $checked runbook links are broken" >&2
  exit 1
fi
echo "  SUCCESS: $checked runbook links resolve"
