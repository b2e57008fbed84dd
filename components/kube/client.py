"""Kubernetes API clients built from a kubeconfig held in memory (never written to a shared path)."""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client, config


def api_client(kubeconfig: str, *, context: str | None = None) -> client.ApiClient:
    """An ApiClient for the kubeconfig text. Raises ValueError with a plain message when unusable."""
    try:
        doc: Any = yaml.safe_load(kubeconfig)
    except yaml.YAMLError as exc:
        raise ValueError(f"kubeconfig is not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise ValueError("kubeconfig has no clusters")
    cfg = client.Configuration()
    config.load_kube_config_from_dict(doc, context=context, client_configuration=cfg, persist_config=False)
    return client.ApiClient(cfg)
