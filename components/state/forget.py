"""Which resources of an exported deployment live in a Kubernetes cluster, and the deployment
without them (pure; `ck8s-gpu forget-cluster` applies it, docs/adr/0021).

Why this exists: pulumi-kubernetes refuses to delete a Helm release on an unreachable cluster,
whatever `deleteUnreachable` says (provider/v4 pkg/provider/provider.go `Delete`: "can't delete
Helm Release with unreachable cluster"), so `pulumi destroy` of a stack whose cluster is gone for
good can never finish. Forgetting the cluster's resources lets it finish; the cluster itself (a
kind container, EC2 instances) is still destroyed by its own provider.

Shape read (pulumi sdk/go/common/apitype/core.go, DeploymentV3 / ResourceV3 / OperationV2):
`resources[]` with `urn`, `type`, `provider` ("<provider urn>::<provider id>"), `parent`,
`dependencies`, `propertyDependencies`, `deletedWith`, `replaceWith`, `viewOf`; `pending_operations[]`
with `resource`.
`pulumi stack import` refuses a snapshot whose references name a missing resource
(pkg/resource/deploy/snapshot.go `VerifyIntegrity`), so every reference to what is forgotten goes too.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..tables import tokens

K8S_PROVIDER = tokens.PROVIDER_KUBERNETES


@dataclass(frozen=True)
class Forgotten:
    urn: str
    type: str

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


def _provider_urn(ref: object) -> str | None:
    # A provider reference is "<urn>::<id>"; URNs contain "::" themselves, ids never do.
    return ref.rsplit("::", 1)[0] if isinstance(ref, str) and "::" in ref else None


def cluster_resources(deployment: Mapping[str, Any]) -> list[Forgotten]:
    """The Kubernetes providers, everything created through them, their children and views (in state order)."""
    resources = [r for r in deployment.get("resources") or [] if isinstance(r, Mapping)]
    chosen = {r["urn"] for r in resources if r.get("type") == K8S_PROVIDER}
    changed = True
    while changed:  # children and dependents-by-provider of what is chosen, to a fixed point
        changed = False
        for r in resources:
            if r["urn"] in chosen:
                continue
            if (_provider_urn(r.get("provider")) in chosen or r.get("parent") in chosen
                    or r.get("viewOf") in chosen):
                chosen.add(r["urn"])
                changed = True
    return [Forgotten(r["urn"], str(r.get("type", ""))) for r in resources if r["urn"] in chosen]


def without(deployment: Mapping[str, Any], forgotten: list[Forgotten]) -> dict[str, Any]:
    """A copy of `deployment` without the `forgotten` resources and every reference to them."""
    gone = {f.urn for f in forgotten}
    out = copy.deepcopy(dict(deployment))
    kept = []
    for r in out.get("resources") or []:
        if r.get("urn") in gone:
            continue
        for key in ("dependencies", "replaceWith"):
            if key in r:
                r[key] = [d for d in r[key] or [] if d not in gone]
        if isinstance(r.get("propertyDependencies"), dict):
            r["propertyDependencies"] = {k: [d for d in v or [] if d not in gone]
                                         for k, v in r["propertyDependencies"].items()}
        if r.get("deletedWith") in gone:
            del r["deletedWith"]
        kept.append(r)
    out["resources"] = kept
    if out.get("pending_operations"):
        out["pending_operations"] = [op for op in out["pending_operations"]
                                     if (op.get("resource") or {}).get("urn") not in gone]
    return out
