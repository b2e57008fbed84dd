"""The shell scripts behind KindCluster's `local.Command` (POSIX sh; shellcheck-clean).

stdout of create/update is the kubeconfig and nothing else (the component stores it as a secret
and does not log stdout); everything kind prints goes to stderr, which Pulumi shows as progress.
kind writes its own kubeconfig copy to a throwaway file, so `pulumi up` never edits the user's
~/.kube/config (`kind export kubeconfig --name <cluster>` does that on request).
"""

from __future__ import annotations

from ..tables import pins

# `kind create --wait`: the control plane is Ready within this on a laptop (image already pulled:
# ~1 min; first pull of the ~1 GB node image adds its download time before the wait starts).
WAIT = "5m"

_PREFLIGHT = r"""set -eu
need() {
  command -v "$1" >/dev/null 2>&1 || { echo "ck8s-gpu kind: '$1' is not on PATH: $2" >&2; exit 1; }
}
need kind "install kind $KIND_MIN_VERSION or newer (https://kind.sigs.k8s.io/docs/user/quick-start/)"
need docker "install Docker (kind runs each node as a container)"
if ! docker info >/dev/null 2>&1; then
  echo "ck8s-gpu kind: the Docker daemon is not reachable (docker info failed): start Docker" >&2
  exit 1
fi
"""

CREATE = _PREFLIGHT + r"""have=$(kind version | awk '{print $2}')
oldest=$(printf '%s\n%s\n' "$KIND_MIN_VERSION" "$have" | sort -V | head -n 1)
if [ "$oldest" != "$KIND_MIN_VERSION" ]; then
  echo "ck8s-gpu kind: kind $have is older than $KIND_MIN_VERSION, the release the pinned node image is built for" >&2
  exit 1
fi
if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER_NAME"; then
  echo "ck8s-gpu kind: a kind cluster named '$KIND_CLUSTER_NAME' exists but is not in this stack's state." >&2
  echo "  Delete it (kind delete cluster --name $KIND_CLUSTER_NAME) or choose settings.kind.clusterName." >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%s\n' "$KIND_CONFIG" >"$work/kind.yaml"
kind create cluster --name "$KIND_CLUSTER_NAME" --config "$work/kind.yaml" \
  --kubeconfig "$work/kubeconfig" --wait "$KIND_WAIT" >&2
kind get kubeconfig --name "$KIND_CLUSTER_NAME"
"""

# Runs when only the scripts or their non-trigger environment changed: the cluster stays; the
# kubeconfig is read again.
UPDATE = _PREFLIGHT + r"""if ! kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER_NAME"; then
  echo "ck8s-gpu kind: kind cluster '$KIND_CLUSTER_NAME' is gone (deleted outside Pulumi?)." >&2
  echo "  Recreate it: pulumi up --replace <the KindCluster's Command URN>, or pulumi destroy && pulumi up." >&2
  exit 1
fi
kind get kubeconfig --name "$KIND_CLUSTER_NAME"
"""

# `kind delete cluster` succeeds when the cluster is already gone: destroy stays idempotent.
DELETE = _PREFLIGHT + r"""work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kind delete cluster --name "$KIND_CLUSTER_NAME" --kubeconfig "$work/kubeconfig" >&2
"""


def environment(cluster_name: str, config_text: str) -> dict[str, str]:
    return {
        "KIND_CLUSTER_NAME": cluster_name,
        "KIND_CONFIG": config_text,
        "KIND_MIN_VERSION": pins.TOOLS["kind"],
        "KIND_WAIT": WAIT,
    }
