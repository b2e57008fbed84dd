#!/usr/bin/env bash
# Every pytest tier, as `make test` (CI) and `make unit` run them: the integration tier beside the
# others instead of after them.
#
# The integration tier runs serially (it owns control planes, kubelets, network namespaces and
# ports) and mostly waits on them: about 4 of its 13 minutes are CPU (docs/benchmarks.md). The pure
# and slow tiers are CPU-bound on every core. Side by side they take about as long as the
# integration tier alone, which is the longer: the others run under `nice`, so the integration
# tier's control planes and engine get the CPU the moment they need it (its timeouts and the CI's
# wall time both hang on it) and the others take the rest. Its output is kept apart and printed
# whole when it ends, never interleaved with the other tiers' dots.
#
# usage: scripts/all_tiers.sh [COMMAND...]   COMMAND (e.g. `make lint types`) runs first, beside it too
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
xdist="-n $(nproc 2>/dev/null || echo 2)"
log=$(mktemp -t ck8s-integration.XXXXXX)

set -m  # the background tier gets its own process group: an interrupt stops all of it
bash scripts/pytest.sh -p no:cacheprovider --durations=25 -m integration >"$log" 2>&1 &
integration=$!
set +m
trap 'kill -- -"$integration" 2>/dev/null; rm -f "$log"; exit 130' INT TERM
echo "integration tier started beside the others (pid $integration; its output follows when it ends)"

failed=()
if [ $# -gt 0 ]; then
  nice -n 10 "$@" || failed+=("$*")
fi
# shellcheck disable=SC2086
nice -n 10 bash scripts/pytest.sh $xdist --durations=25 -m "not integration" || failed+=("the pure and slow tiers")
wait "$integration" || failed+=("the integration tier")
echo "----- the integration tier (it ran beside the above) -----"
cat "$log"
rm -f "$log"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
