"""How a GPU worker gets its join token without holding any credential that could mint more (pure).

Workers run arbitrary user containers, so a worker must never hold k8sd's CAPI auth token: its
`x/capi/generate-join-token` endpoint honours `"worker": false`, and a control-plane join hands
over the cluster's CA keys. Instead the worker role may send exactly one SSM Command document,
this one, to this cluster's control planes; the document can only run
`k8s get-join-token <NodeName> --worker`, and SSM refuses a NodeName outside `allowedPattern`
before anything runs (no shell injection through the parameter). See docs/adr/0011.
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


def mint_command(node_name_placeholder: str = "{{ NodeName }}") -> str:
    return f"{K8S_CLI} get-join-token '{node_name_placeholder}' --worker --expires-in {WORKER_TOKEN_TTL}"


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
            }
        },
        "mainSteps": [
            {
                "action": "aws:runShellScript",
                "name": "mintWorkerJoinToken",
                "inputs": {"runCommand": [mint_command()], "timeoutSeconds": EXECUTION_TIMEOUT_SECONDS},
            }
        ],
    }
