"""Typed entry points for Pulumi programs other than this repository's (docs/components.md).

A consumer states what it has and wants in small frozen args classes; each component turns its
args into the same validated Settings this repository's program uses (every rule runs, before
anything is registered: a bad argument ends the program with one message naming every bad field),
then wires the platform cluster, the add-ons and the smoke test as children of itself.

- `GpuAddons`: the GPU add-ons and the DRA smoke test on a cluster you already have (its kubeconfig).
- `GpuCluster`: Canonical Kubernetes control planes and GPU node pools on AWS, in a VPC of yours
  or a new one, with the add-ons and the smoke test.

Every Pulumi language reaches the same two components through the component provider
(components/provider, ADR 0045); its schema reads the output annotations below at run time, so
this module keeps real annotations (no `from __future__ import annotations`).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi

from .settings.load import SettingsError
from .settings.model import Settings
from .settings.problems import Problem
from .tables import tokens

Driver = Literal["operator", "precompiled", "host"]
Scheduler = Literal["kai", "default"]


def _model_default(path: str, note: str = "") -> dict[str, str]:
    """Metadata of an argument whose default is the settings model's (`path` in a stack file's
    spelling): unset (None) it is not sent, so the model's default and its rules apply (the
    provider's schema quotes that default, with `note`)."""
    return {"settings": path, "note": note}


@dataclass(frozen=True)
class GpuPool:
    """GPU nodes of one instance type. On an existing cluster `nodes` is how many already joined;
    on AWS it is the group's desired size, between `min_nodes` and `max_nodes` (default: `nodes`)."""

    name: str
    instance_type: str
    nodes: int = 1
    min_nodes: int | None = None
    max_nodes: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    ami: str | None = None  # AWS: an AMI id or ssm: parameter of a GPU node image (images/)

    def raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "instanceType": self.instance_type,
                               "minSize": self.nodes if self.min_nodes is None else self.min_nodes,
                               "desiredSize": self.nodes,
                               "maxSize": self.nodes if self.max_nodes is None else self.max_nodes}
        if self.labels:
            out["labels"] = dict(self.labels)
        if self.ami is not None:
            out["ami"] = self.ami
        return out


@dataclass(frozen=True)
class SmokeTestArgs:
    """The DRA smoke test `pulumi up` waits for: `gpus` single-GPU pods on distinct GPUs."""

    gpus: int | None = field(default=None, metadata=_model_default("smokeTest.gpus"))
    scheduler: Scheduler | None = field(default=None, metadata=_model_default(
        "smokeTest.scheduler", "`default` where the GPUs are simulated (no KAI there)"))
    timeout_seconds: int | None = field(default=None, metadata=_model_default("smokeTest.timeoutSeconds"))
    enabled: bool = True  # False: no smoke test (as `smoke_test=None`); other languages have no None

    def raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {"enabled": self.enabled}
        chosen = {"gpus": self.gpus, "scheduler": self.scheduler, "timeoutSeconds": self.timeout_seconds}
        out.update({key: value for key, value in chosen.items() if value is not None})
        return out


def _stack_choices(track: str | None, driver: Driver | None) -> dict[str, Any]:
    """The track and driver where the caller chose them; unset, the settings' defaults apply."""
    out: dict[str, Any] = {}
    if track is not None:
        out["kubernetes"] = {"track": track}
    if driver is not None:
        out["gpuStack"] = {"driver": driver}
    return out


def _smoke(args: SmokeTestArgs | None) -> dict[str, Any]:
    return args.raw() if args is not None else {"enabled": False}


def args_error(error: SettingsError) -> pulumi.RunError:
    """Bad component args: a RunError with one message naming every bad field; `problems` keeps
    them apart for the component provider, which reports each to the engine as an input error."""
    exc = pulumi.RunError(error.message)
    exc.problems = error.problems
    return exc


def _settings(kind: str, name: str, raw: dict[str, Any], overrides: Mapping[str, Any],
              problems: Sequence[Problem] = ()) -> Settings:
    """Validated settings, or pulumi.RunError with one message naming every bad field: the args'
    own `problems` (what the settings cannot see) with the settings' ones."""
    from .addons.base import deep_merge
    from .validate import parse

    source = f"{kind} {name}"
    try:
        settings = parse(deep_merge(raw, dict(overrides) if isinstance(overrides, Mapping) else {}), source)
    except SettingsError as exc:
        problems = [*problems, *exc.problems]
    if not isinstance(overrides, Mapping):
        problems = [*problems, ("settings", f"must be a mapping of stack settings, got {type(overrides).__name__}")]
    if problems:
        raise args_error(SettingsError(source, problems)) from None  # no traceback, nothing registered
    return settings


def _pool_problems(pools: Sequence[GpuPool] | None) -> list[Problem]:
    # A missing list would otherwise surface only as "0 GPUs" in the smoke test's check.
    return [("pools", "required: at least one GPU pool")] if pools is None else []


def _pools(pools: Sequence[GpuPool] | None) -> list[dict[str, Any]]:
    return [p.raw() for p in pools or ()]


@dataclass(frozen=True)
class GpuAddonsArgs:
    """`settings` takes any further camelCase stack setting (docs/addons.md), merged over the args."""

    kubeconfig: pulumi.Input[str]
    pools: Sequence[GpuPool]
    kubernetes_track: str | None = field(default=None, metadata=_model_default("kubernetes.track"))
    driver: Driver | None = field(default=None, metadata=_model_default("gpuStack.driver"))
    smoke_test: SmokeTestArgs | None = SmokeTestArgs()
    # True for a cluster whose GPU nodes are simulated (no kubelet, published ResourceSlices: CI's
    # `local` control plane); the add-ons that need real GPUs are then left out.
    simulated_gpus: bool = False
    environment: str = "gpu"
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_settings(self, name: str) -> Settings:
        raw = {"platform": "local" if self.simulated_gpus is True else "existing", "environment": self.environment,
               **_stack_choices(self.kubernetes_track, self.driver), "nodePools": _pools(self.pools),
               "smokeTest": _smoke(self.smoke_test)}
        problems = _pool_problems(self.pools)
        if self.kubeconfig is None:
            problems.append(("kubeconfig", "required: the admin kubeconfig of your cluster"))
        if not isinstance(self.simulated_gpus, bool):
            problems.append(("simulatedGpus", f"must be true or false, got {type(self.simulated_gpus).__name__}"))
        return _settings("GpuAddonsArgs", name, raw, self.settings, problems)


@dataclass(frozen=True)
class GpuClusterArgs:
    """A cluster on AWS. `vpc_id` + `private_subnet_ids` (+ `public_subnet_ids` for an
    internet-facing API) place it in your VPC; without them it gets its own."""

    region: str
    pools: Sequence[GpuPool]
    control_planes: Literal[1, 3] = 1
    vpc_id: str | None = None
    private_subnet_ids: Sequence[str] = ()
    public_subnet_ids: Sequence[str] = ()
    api_allow_list: Sequence[str] = ()
    kubernetes_track: str | None = field(default=None, metadata=_model_default("kubernetes.track"))
    driver: Driver | None = field(default=None, metadata=_model_default("gpuStack.driver"))
    smoke_test: SmokeTestArgs | None = SmokeTestArgs()
    environment: str = "gpu"
    production: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_settings(self, name: str) -> Settings:
        network: dict[str, Any] = {"apiAllowList": list(self.api_allow_list)}
        if self.vpc_id is not None:
            network["existing"] = {"vpcId": self.vpc_id, "privateSubnetIds": list(self.private_subnet_ids),
                                   "publicSubnetIds": list(self.public_subnet_ids)}
        if self.control_planes == 3 and self.vpc_id is None:
            network["azCount"] = 3
        raw = {"platform": "aws", "region": self.region, "environment": self.environment,
               "production": self.production, **_stack_choices(self.kubernetes_track, self.driver),
               "controlPlane": {"count": self.control_planes}, "nodePools": _pools(self.pools),
               "network": network, "tags": dict(self.tags), "smokeTest": _smoke(self.smoke_test)}
        return _settings("GpuClusterArgs", name, raw, self.settings, _pool_problems(self.pools))


class _GpuStack(pulumi.ComponentResource):
    """Cluster handle + add-ons + smoke test, children of one component (what __main__.py wires)."""

    kubeconfig: pulumi.Output[str]
    addons: pulumi.Output[list[str]]
    smoke_report: pulumi.Output[Any]

    def _wire(self, name: str, settings: Settings, kubeconfig: pulumi.Input[str] | None) -> None:
        from .wiring import Names, wire

        stack = wire(settings, kubeconfig, Names.component(name), opts=pulumi.ResourceOptions(parent=self))
        self.settings = settings
        self.cluster = stack.cluster
        self.kubeconfig = stack.cluster.kubeconfig
        self.addons = pulumi.Output.from_input([a.name for a in stack.addons.graph.order])
        self.smoke_report = stack.smoke.report
        # A backup bucket only where settings.backup asks for one (and Velero is installed).
        self.backup_bucket = stack.backup.bucket_name if stack.backup else None
        outputs: dict[str, Any] = {"kubeconfig": self.kubeconfig, "addons": self.addons,
                                   "smokeReport": self.smoke_report}
        if self.backup_bucket is not None:
            outputs["backupBucket"] = self.backup_bucket
        self.register_outputs(outputs)


class GpuAddons(_GpuStack):
    """GPU add-ons and the DRA smoke test on a cluster you already have."""

    TYPE = tokens.GPU_ADDONS

    def __init__(self, name: str, args: GpuAddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        settings = args.to_settings(name)  # before anything is registered
        super().__init__(self.TYPE, name, None, opts)
        self._wire(name, settings, args.kubeconfig)


class GpuCluster(_GpuStack):
    """Canonical Kubernetes with GPU node pools on AWS, with the add-ons and the smoke test."""

    TYPE = tokens.GPU_CLUSTER

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        settings = args.to_settings(name)
        super().__init__(self.TYPE, name, None, opts)
        self._wire(name, settings, None)
