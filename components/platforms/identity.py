"""A cluster's identity for `kubernetes.Provider(cluster_identifier=...)` (pure).

With an identifier set, a new kubeconfig (rotated credentials, a new endpoint name) no longer
replaces every Kubernetes resource; only a different identifier does. The cluster CA is what
makes a cluster that cluster: a rebuilt kind cluster has a new CA (everything is recreated in it),
a credential rotation keeps it (nothing is replaced).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from ..kube.kubeconfig import parse_kubeconfig


def _current_cluster(doc: dict[str, Any]) -> dict[str, Any]:
    contexts = {c["name"]: c.get("context") or {} for c in doc.get("contexts") or []}
    clusters = {c["name"]: c.get("cluster") or {} for c in doc.get("clusters") or []}
    current = doc.get("current-context")
    name = contexts.get(current, {}).get("cluster") if current else None
    if name in clusters:
        return clusters[name]
    if len(clusters) == 1:
        return next(iter(clusters.values()))
    raise ValueError("kubeconfig: cannot tell which cluster the current context uses")


def cluster_identity(kubeconfig: str) -> str:
    """`ca-<sha256/16>` of the CA certificate; `server-<sha256/16>` of the URL when no CA is inline."""
    doc = parse_kubeconfig(kubeconfig)  # never echoes the text: it holds credentials
    if not isinstance(doc, dict):
        raise ValueError("kubeconfig is not a mapping")
    cluster = _current_cluster(doc)
    ca = cluster.get("certificate-authority-data")
    if ca:
        try:
            material = base64.b64decode(ca, validate=False)
        except ValueError:
            material = str(ca).encode()
        return "ca-" + hashlib.sha256(material).hexdigest()[:16]
    server = str(cluster.get("server", ""))
    return "server-" + hashlib.sha256(server.encode()).hexdigest()[:16]
