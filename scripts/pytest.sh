#!/usr/bin/env bash
# pytest with the tools' environment; "no tests ran" (exit 5) is a failure, never a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
env_file=$(bash tools/build.sh --print 2>/dev/null)/../env.sh
# shellcheck disable=SC1090
[ -f "$env_file" ] && source "$env_file"
if [ "${CI:-}" = "true" ]; then
  export CK8S_GPU_REQUIRE_TOOLS=1   # in CI a missing tool is a failure, not a skip
fi
.venv/bin/python -m pytest "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "pytest: no tests ran: failing on purpose" >&2
  exit 1
fi
exit $rc
