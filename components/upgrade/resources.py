"""The dynamic resources through which `pulumi up` upgrades nodes in place (ADR 0015).

`NodeUpgrade` (one per control plane, chained) and `PoolUpgrade` (one per pool) carry the track.
Created: nothing to do (the nodes booted on that track). Track changed: preview refuses a skipped
minor or a downgrade (check), then update runs the executor over SSM. The add-ons and launch
templates depend on them, so nothing new lands on a node before its minor is right.

Pickled into the state by reference to this module: keep it importable at this path.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from ..settings.model import SnapPinSettings, UpgradeSettings
from . import skew
from .executor import Operator, Outcome


def _failures(olds: dict[str, Any], news: dict[str, Any]) -> list[pulumi.dynamic.CheckFailure]:
    old, new = olds.get("track"), news.get("track")
    if not old or not new:
        return []
    return [pulumi.dynamic.CheckFailure("track", p) for p in skew.track_change_problems(str(old), str(new))]


def _outcomes(items: Sequence[Outcome]) -> list[dict[str, str]]:
    return [{"node": o.node, "result": o.result, "detail": o.detail} for o in items]


def _operator(inputs: dict[str, Any]) -> tuple[Operator, Any]:
    from .aws_runner import SsmRunner, discover

    region, cluster = str(inputs["region"]), str(inputs["cluster"])
    cps, pools = discover(region, cluster)
    policy = UpgradeSettings.model_validate(inputs.get("policy") or {})
    return Operator(SsmRunner(region), cps, policy, log=lambda line: pulumi.log.info(line), snap=_snap(inputs)), pools


def _snap(inputs: dict[str, Any]) -> SnapPinSettings | None:
    """The pin as the state holds it (Pulumi's numbers may come back as floats)."""
    pin = inputs.get("snap")
    if not pin:
        return None
    return SnapPinSettings.model_validate({"version": pin["version"],
                                           "revisions": {k: int(v) for k, v in pin["revisions"].items()}})


class _Provider(pulumi.dynamic.ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        return pulumi.dynamic.CheckResult(news, _failures(_olds or {}, news))

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=uuid.uuid4().hex, outs={**props, "outcomes": []})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        keys = sorted(k for k in news if k != "outcomes" and olds.get(k) != news.get(k))
        return pulumi.dynamic.DiffResult(changes=bool(keys), replaces=[k for k in keys if k == "instanceId"],
                                         delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        outcomes: list[Outcome] = []
        # A new track, or a new pinned snap (a patch upgrade within the track, ADR 0039).
        if olds.get("track") != news.get("track") or olds.get("snap") != news.get("snap"):
            outcomes = self.run(news)
        return pulumi.dynamic.UpdateResult(outs={**news, "outcomes": _outcomes(outcomes)})

    def run(self, inputs: dict[str, Any]) -> list[Outcome]:
        raise NotImplementedError


class _NodeProvider(_Provider):
    def run(self, inputs: dict[str, Any]) -> list[Outcome]:
        op, _ = _operator(inputs)
        node = next((cp for cp in op.control_planes if cp.instance_id == inputs["instanceId"]), None)
        if node is None:
            raise RuntimeError(f"control plane instance {inputs['instanceId']} is not running in cluster "
                               f"{inputs['cluster']}: replace it first (ck8s-gpu replace-node)")
        return op.upgrade_nodes([node], str(inputs["track"]))


class _PoolProvider(_Provider):
    def run(self, inputs: dict[str, Any]) -> list[Outcome]:
        op, pools = _operator(inputs)
        return op.upgrade_pool(pools.get(str(inputs["pool"]), []), str(inputs["track"]))


class _CompleteProvider(_Provider):
    def run(self, inputs: dict[str, Any]) -> list[Outcome]:
        op, pools = _operator(inputs)
        return op.finish(pools, str(inputs["track"]))


def _policy(policy: UpgradeSettings) -> dict[str, Any]:
    return policy.model_dump(by_alias=True)


class _Upgrade(pulumi.dynamic.Resource):
    """The shared shape: the track and where to act, the policy, and the outcomes of the last run."""

    outcomes: pulumi.Output[list[dict[str, str]]]

    def __init__(self, provider: _Provider, name: str, track: str, region: str, cluster: str,
                 policy: UpgradeSettings, extra: dict[str, Any], opts: pulumi.ResourceOptions | None,
                 snap: SnapPinSettings | None = None) -> None:
        # `snap` None is no key at all: stacks without a pin keep their state's inputs unchanged.
        pin = {"snap": snap.model_dump()} if snap is not None else {}
        super().__init__(provider, name, {"track": track, "region": region, "cluster": cluster, **extra, **pin,
                                          "policy": _policy(policy), "outcomes": None}, opts)


class NodeUpgrade(_Upgrade, module="ck8s-gpu", name="NodeUpgrade"):  # type: ignore[misc,call-arg]
    """One control plane's Kubernetes minor, upgraded in place when the track changes."""

    def __init__(self, name: str, *, track: str, region: str, cluster: str, instance_id: pulumi.Input[str],
                 policy: UpgradeSettings, opts: pulumi.ResourceOptions | None = None,
                 snap: SnapPinSettings | None = None) -> None:
        super().__init__(_NodeProvider(), name, track, region, cluster, policy, {"instanceId": instance_id}, opts,
                         snap)


class PoolUpgrade(_Upgrade, module="ck8s-gpu", name="PoolUpgrade"):  # type: ignore[misc,call-arg]
    """One pool's nodes, upgraded in place (maxUnavailable at a time) when the track changes."""

    def __init__(self, name: str, *, track: str, region: str, cluster: str, pool: str, policy: UpgradeSettings,
                 opts: pulumi.ResourceOptions | None = None, snap: SnapPinSettings | None = None) -> None:
        super().__init__(_PoolProvider(), name, track, region, cluster, policy, {"pool": pool}, opts, snap)


class UpgradeComplete(_Upgrade, module="ck8s-gpu", name="UpgradeComplete"):  # type: ignore[misc,call-arg]
    """After every pool: stragglers upgraded, then k8sd's InPlace Upgrade reaches Completed."""

    def __init__(self, name: str, *, track: str, region: str, cluster: str, policy: UpgradeSettings,
                 opts: pulumi.ResourceOptions | None = None, snap: SnapPinSettings | None = None) -> None:
        super().__init__(_CompleteProvider(), name, track, region, cluster, policy, {}, opts, snap)
