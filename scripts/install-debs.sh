#!/usr/bin/env bash
# Debian packages the validation tier, the node-script scenarios (real curl and openssl against
# the fake k8sd) and the node tier (runc, CNI plugins) need. Installs as root (CI) or through sudo;
# elsewhere it says what is missing and the tests that need them skip with that reason (CI makes them fail).
set -euo pipefail
need=()
command -v cloud-init >/dev/null || need+=(cloud-init)
command -v shellcheck >/dev/null || need+=(shellcheck)
command -v curl >/dev/null || need+=(curl)
command -v openssl >/dev/null || need+=(openssl)
# The node tier (tools/nodetier.py): containerd's shim runs runc; pods get their network from
# the CNI bridge, host-local and loopback plugins.
[ -x /usr/sbin/runc ] || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
  echo "install-debs: not root and no sudo: install ${need[*]} yourself (apt-get install ${need[*]})" >&2
  exit 0
fi
echo "install-debs: installing ${need[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
