"""How a GPU worker gets its join token without holding any credential that could mint more (pure).

Workers run arbitrary user containers, so a worker must never hold k8sd's CAPI auth token: its
`x/capi/generate-join-token` endpoint honours `"worker": false`, and a control-plane join hands
over the cluster's CA keys. Instead the worker role may send exactly one SSM Command document,
this one, to this cluster's control planes; the document can only run
`k8s get-join-token <NodeName> --worker`, and SSM refuses a NodeName outside `allowedPattern`
before anything runs (no shell injection through the parameter). See docs/adr/0011.

The document also keeps kubelets from ever being newer than an API server. Pools launch as soon as
their network exists, and a track upgrade changes their launch template before the control planes
are upgraded (docs/adr/0019), so a worker launched mid-upgrade may carry a newer minor than the
cluster serves. The document refuses to mint for a worker whose minor (`KubeletMinor`) is above the
oldest control-plane Node's kubelet (on k8s-snap the API server and the kubelet of a control plane
come from one snap revision); the worker's join loop retries until the upgrade has passed.
"""

from __future__ import annotations

from typing import Any

# EC2 private DNS names (ip-10-0-1-23.ec2.internal, i-0abc....eu-west-1.compute.internal) and
# Kubernetes node names: a lowercase DNS subdomain, never a quote, space or `$`.
NODE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
# k8s-snap's CLI lives in /snap/bin; SSM Run Command runs as root with a minimal PATH.
K8S_CLI = "/snap/bin/k8s"
# Worker tokens are single-use and bound to the node name; a short life limits what a leaked one
# is worth (`k8s get-join-token --expires-in`, a Go duration).
WORKER_TOKEN_TTL = "15m"
EXECUTION_TIMEOUT_SECONDS = "60"
# The joining worker's Kubernetes minor, e.g. `1.35`. The default lets a worker launched from a
# launch template older than this parameter mint as before (its script does not send it).
MINOR_PATTERN = r"^1\.[0-9]{1,3}$"
UNVERSIONED_MINOR = "1.0"
# Label k8sd puts on every control-plane Node (k8s-snap pkg/k8sd/setup/kubelet.go, control-plane labels).
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"

# Reads `k8s kubectl get nodes -o json` on stdin; exits 1 naming the reason unless every control-plane
# Node's kubelet is at least the joining worker's minor. python3 is part of every Ubuntu cloud image
# (cloud-init is written in it); the upgrade executor's node reads use it the same way.
_GUARD = f"""import json, sys
want = int(sys.argv[1].split(".")[1])
nodes = json.load(sys.stdin).get("items") or []
versions = sorted((n.get("status", {{}}).get("nodeInfo", {{}}).get("kubeletVersion", "?"), n["metadata"]["name"])
                  for n in nodes if "{CONTROL_PLANE_LABEL}" in (n["metadata"].get("labels") or {{}}))
if not versions:
    sys.exit("no control-plane Node is registered yet")
for version, name in versions:
    parts = version.lstrip("v").split(".")
    if len(parts) < 2 or not parts[1].isdigit() or int(parts[1]) < want:
        sys.exit(f"control plane {{name}} runs {{version}}, not at least the joining worker (1.{{want}}): "
                 "the worker waits until the control planes are upgraded")
"""
assert "'" not in _GUARD  # it travels inside a single-quoted shell word


def mint_command(node_name_placeholder: str = "{{ NodeName }}") -> str:
    return f"{K8S_CLI} get-join-token '{node_name_placeholder}' --worker --expires-in {WORKER_TOKEN_TTL}"


def run_command() -> list[str]:
    """The document's shell lines: the version guard, then the mint (`set -e`: a refused guard mints nothing)."""
    return [
        "set -eu",
        f"{K8S_CLI} kubectl get nodes -o json | python3 -c '{_GUARD}' '{{{{ KubeletMinor }}}}'",
        mint_command(),
    ]


def mint_document(cluster_name: str) -> dict[str, Any]:
    """The SSM Command document (schema 2.2) workers send to a control plane."""
    return {
        "schemaVersion": "2.2",
        "description": f"ck8s-gpu {cluster_name}: mint a single-use WORKER join token for the named node",
        "parameters": {
            "NodeName": {
                "type": "String",
                "description": "The joining node's name (its EC2 private DNS name)",
                "allowedPattern": NODE_NAME_PATTERN,
            },
            "KubeletMinor": {
                "type": "String",
                "description": "The joining node's Kubernetes minor (e.g. 1.35): no control plane may be older",
                "allowedPattern": MINOR_PATTERN,
                "default": UNVERSIONED_MINOR,
            },
        },
        "mainSteps": [
            {
                "action": "aws:runShellScript",
                "name": "mintWorkerJoinToken",
                "inputs": {"runCommand": run_command(), "timeoutSeconds": EXECUTION_TIMEOUT_SECONDS},
            }
        ],
    }
