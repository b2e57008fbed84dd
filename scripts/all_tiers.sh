#!/usr/bin/env bash
# Every pytest tier, as `make test` (CI) and `make unit` run them: the integration tier beside the
# others instead of after them, itself in two lanes.
#
# The integration tier mostly waits on control planes, kubelets and engines: about 4 of its 14
# minutes are CPU (docs/benchmarks.md). Its tests own what they start, so they run serially within
# a lane; the lanes split them by the one thing two of them cannot share on a machine:
#   - `kubelets`: the tests that start real kubelet nodes (tools/nodetier.py names bridges and node
#     addresses by index), one after another;
#   - the rest: loopback control planes on free ports, engines with their own state and Helm homes.
#     This lane runs with CK8S_GPU_NO_KUBELETS=1, so a test that starts a node tier without the
#     marker fails with what to do instead of racing the other lane.
# Tests marked `kubelet_lane` start no kubelet but run in the first lane, between its node tiers,
# so both lanes end about together: KubeRay's scenarios. (CI 2026-12-06: kubelets 591 s, the rest
# 920 s before KEDA, the gateway and KubeRay moved there; after the MIG node, the utilization and
# conformance tests the kubelets lane was the longer, 1,110 s to 890 s, and KEDA and the gateway
# went back.)
# The pure and slow tiers are CPU-bound on every core and run under `nice`, so the lanes' control
# planes and engines get the CPU the moment they need it (their timeouts and the CI's wall time hang
# on them). Each lane's output is kept apart and printed whole when it ends.
#
# usage: scripts/all_tiers.sh [COMMAND...]   COMMAND (e.g. `make lint types`) runs first, beside it too
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
xdist="-n $(nproc 2>/dev/null || echo 2)"
logs=()
lanes=()
set -m  # each background lane gets its own process group: an interrupt stops all of it
lane() {  # lane LABEL ENV... -- PYTEST-ARGS...
  local label=$1 log; shift
  log=$(mktemp -t "ck8s-integration-$label.XXXXXX")
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" bash scripts/pytest.sh -p no:cacheprovider --durations=15 "$@" >"$log" 2>&1 &
  lanes+=("$label:$!")
  logs+=("$log")
  echo "integration lane '$label' started beside the others (pid $!; its output follows when it ends)"
}
lane kubelets -- -m "integration and (kubelets or kubelet_lane)"
lane engines CK8S_GPU_NO_KUBELETS=1 -- -m "integration and not kubelets and not kubelet_lane"
set +m
stop_lanes() { local l; for l in "${lanes[@]}"; do kill -- -"${l#*:}" 2>/dev/null; done; rm -f "${logs[@]}"; }
trap 'stop_lanes; exit 130' INT TERM

failed=()
if [ $# -gt 0 ]; then
  nice -n 10 "$@" || failed+=("$*")
fi
# shellcheck disable=SC2086
CK8S_GPU_NO_KUBELETS=1 nice -n 10 bash scripts/pytest.sh $xdist --durations=25 -m "not integration" || failed+=("the pure and slow tiers")
for i in "${!lanes[@]}"; do
  label=${lanes[$i]%%:*}
  wait "${lanes[$i]#*:}" || failed+=("the integration lane '$label'")
  echo "----- the integration lane '$label' (it ran beside the above) -----"
  cat "${logs[$i]}"
  rm -f "${logs[$i]}"
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
