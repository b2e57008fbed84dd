"""The KAI stand-in's gangs (tests/fakes/kai/binder.py) judge a gang on one listing of the cluster,
as KAI judges it on one snapshot: a member created between the stand-in's two listings must not make
a gang that cannot fit get its other pods bound (CI saw gang-never-0 bound that way)."""

from __future__ import annotations

from typing import Any, cast

from components.smoke.gateway import KubeGateway
from tests.fakes.kai.binder import POD_GROUP_ANNOTATION, SCHEDULER, KaiStandIn

NS = "ck8s"


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": name, "annotations": {POD_GROUP_ANNOTATION: "g"},
                         "labels": {"kai.scheduler/queue": "q"}},
            "spec": {"schedulerName": SCHEDULER, "resourceClaims": [{"name": "gpu", "resourceClaimName": name}]},
            "status": {"phase": "Pending"}}


def _claim(name: str, gpus: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "labels": {"kai.scheduler/queue": "q"}, "uid": name,
                         "resourceVersion": "1"},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                            "count": gpus}}]}},
            "status": {}}


class RacingGateway:
    """The first Pod listing holds only g-0; g-1 (more GPUs than the node has) exists from the next."""

    def __init__(self) -> None:
        self.pod_lists = 0
        self.calls: list[str] = []
        self.claims = {"g-0": _claim("g-0", 1), "g-1": _claim("g-1", 9)}
        node = {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n0", "pool": {"name": "n0"},
                         "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}}
                                     for i in range(8)]}}
        self.slices = [node]

    def list(self, api: str, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]:
        if kind == "Pod":
            self.pod_lists += 1
            return ([_pod("g-0")] if self.pod_lists == 1 else [_pod("g-0"), _pod("g-1")]), "1"
        if kind == "ResourceSlice":
            return self.slices, "1"
        if kind == "ResourceClaim":
            return list(self.claims.values()), "1"
        return [], "1"

    def get(self, api: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        if kind == "PodGroup":
            return {"metadata": {"name": name}, "spec": {"minMember": 2, "queue": "q"}}
        if kind == "ResourceClaim":
            return self.claims.get(name)
        return None

    def __getattr__(self, name: str) -> Any:  # any write (events, claim status, binding) is recorded
        def record(*args: Any, **kwargs: Any) -> dict[str, Any]:
            self.calls.append(name)
            return {}
        return record


def test_a_member_created_between_listings_keeps_a_gang_that_cannot_fit_unbound() -> None:
    gw = RacingGateway()
    stand_in = KaiStandIn(cast(KubeGateway, gw), NS, frozenset({"q"}))
    stand_in.cycle()
    assert gw.pod_lists >= 2  # the race happened: the gang's own listing saw g-1
    assert stand_in.bound == [] and stand_in.allocated == []
    assert "_json" not in gw.calls  # no Binding posted
