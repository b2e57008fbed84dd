#!/usr/bin/env bash
# Build (first time, tens of minutes) or reuse (seconds) the real-engine tools outside the
# checkout. Needs Go; without it the real-engine tests skip (and fail in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
  echo "tools: no Go toolchain: the real-engine tier will skip" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi
bash tools/build.sh >/dev/null
