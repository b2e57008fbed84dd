"""Kubernetes API clients built from a kubeconfig held in memory (never written to a shared path)."""

from __future__ import annotations

from kubernetes import client, config

from components.kube.kubeconfig import parse_kubeconfig


def api_client(kubeconfig: str, *, context: str | None = None) -> client.ApiClient:
    """An ApiClient for the kubeconfig text. Raises ValueError with a plain message when unusable."""
    doc = parse_kubeconfig(kubeconfig)
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise ValueError("kubeconfig has no clusters")
    cfg = client.Configuration()
    config.load_kube_config_from_dict(doc, context=context, client_configuration=cfg, persist_config=False)
    return client.ApiClient(cfg)
