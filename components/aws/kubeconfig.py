"""The admin kubeconfig, built from Pulumi state alone (pure): CA + admin client cert + endpoint."""

from __future__ import annotations

import base64

import yaml

API_PORT = 6443


def api_server_url(host: str) -> str:
    return f"https://{host}:{API_PORT}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def render_kubeconfig(cluster_name: str, server: str, ca_pem: str, cert_pem: str, key_pem: str) -> str:
    """A kubeconfig with one cluster, one user, one context, all named after the cluster."""
    user = f"{cluster_name}-admin"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [
            {"name": user, "user": {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)}}
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": user}}],
        "current-context": cluster_name,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)
