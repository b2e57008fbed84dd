"""Typed stack settings. Every default of the project lives in this file.

Stack files hold one structured key, `ck8s-gpu:settings`, in camelCase (Pulumi's convention);
Python code reads snake_case attributes. Models are frozen and reject unknown keys so a typo
in a stack file is an error with its path, never a silently ignored setting.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from ..tables import pins
from .platforms import TRAITS, PlatformTraits

Platform = Literal["aws", "kind", "existing", "local"]
Allocation = Literal["dra", "device-plugin"]
# Where GPU nodes get the NVIDIA kernel driver (docs/adr/0018): `operator` the GPU Operator's driver
# container compiles it on the node; `precompiled` the same container ships it built for the node's
# kernel (driver.usePrecompiled); `host` it is in the node image already (driver.enabled=false).
DriverMode = Literal["operator", "precompiled", "host"]
# Where GPU nodes get the NVIDIA Container Toolkit (docs/adr/0046): `operator` the GPU Operator's
# toolkit DaemonSet installs it and restarts containerd; `host` the node image carries it and the
# node script hooks it into k8s-snap's containerd before containerd first starts (toolkit.enabled=false).
ToolkitMode = Literal["operator", "host"]
# Who installs the NVIDIA DRA driver (docs/adr/0048): `chart`, its own release of
# kubernetes-sigs/dra-driver-nvidia-gpu beside the GPU Operator's ClusterPolicy; `operator`, the GPU
# Operator's GPUCluster (nvidia.com/v1alpha1, v26.7.0+), which manages the DRA driver,
# ComputeDomains, the DCGM exporter and a DRA validator, and deploys no device plugin, toolkit, GFD
# or MIG manager (api/nvidia/v1alpha1/gpucluster_types.go, internal/state/manager.go at v26.7.0).
DraManager = Literal["chart", "operator"]
MigStrategy = Literal["none", "single", "mixed"]
CapacityType = Literal["on-demand", "spot"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
Scheduler = Literal["kai", "default"]
# What the add-on graph matches needs against (components/addons/base.py documents each).
ClusterCapability = Literal["gpu-driver", "dra-gpus", "kai-crds", "monitoring-crds"]

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"

# Upper bounds from the type each number ends up in (a value above one breaks only where it is
# consumed, at `up` or later): Kubernetes quantities and Go's int are int64 (k8s.io/apimachinery
# pkg/api/resource Quantity, snapd's snap.Revision{N int}); Go's time.Duration is int64 nanoseconds
# (Velero's Schedule `ttl`, metav1.Duration). tests/unit/test_settings_bounds.py holds every number
# of the model to having one.
INT64_MAX = 2**63 - 1
QUANTITY_MAX_GIB = INT64_MAX // 2**30  # `<N>Gi` and bytes as an int64 quantity
QUANTITY_MAX_MIB = INT64_MAX // 2**20  # `<N>Mi`
DURATION_MAX_HOURS = INT64_MAX // (3600 * 10**9)  # 2562047: `<N>h0m0s` as a Go time.Duration
# An image reference pinned by digest: [host[:port]/]path:tag@sha256:<hex> (distribution/reference
# grammar: path components, tag, canonical digest), e.g. ck8s-gpu.local/smoke-probe:1a2b@sha256:...
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
IMAGE_BY_DIGEST = (rf"^{_PATH_PART}(?::[0-9]+)?(?:/{_PATH_PART})*:[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}"
                   r"@sha256:[0-9a-f]{64}$")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    @model_validator(mode="before")
    @classmethod
    def _lists_as_tuples(cls, data: Any) -> Any:
        # The config boundary validates strictly (components/settings/load.py parse_model: no bool
        # as a count, no "2" as a number), and strict pydantic takes only a tuple for a tuple field:
        # a stack file's lists become tuples here, before anything else reads them.
        if not isinstance(data, dict):
            return data
        keys = _tuple_keys(cls)
        return {k: tuple(v) if k in keys and isinstance(v, list) else v for k, v in data.items()}


def _tuple_keys(model: type[BaseModel]) -> frozenset[str]:
    """Names and aliases of `model`'s tuple-typed fields (`tuple[...]`, `tuple[...] | None`)."""
    found: set[str] = set()
    for name, field in model.model_fields.items():
        ann = field.annotation
        if get_origin(ann) is tuple or (get_origin(ann) in (Union, UnionType) and
                                        any(get_origin(a) is tuple for a in get_args(ann))):
            found |= {name, field.alias or name}
    return frozenset(found)


class FeatureSettings(_Model):
    """Canonical Kubernetes' built-in features. `k8s bootstrap --file` turns every feature the file
    leaves unset OFF (k8s-snap src/k8s/pkg/k8sd/types/cluster_config_defaults.go), so the bootstrap
    file names each one with these values."""

    network: bool = True  # Cilium: without a CNI no node ever becomes Ready
    dns: bool = True  # CoreDNS
    metrics_server: bool = True
    gateway: bool = False
    ingress: bool = False
    load_balancer: bool = False  # Cilium L2/BGP; on AWS the cloud controller manager serves Services
    local_storage: bool = False


class UpgradeSettings(_Model):
    """How a track upgrade rolls nodes (ADR 0015): in place, control planes one at a time, then
    each pool `maxUnavailable` nodes at a time, each cordoned and drained first."""

    max_unavailable: int = Field(default=1, ge=1, le=100)  # nodes of one pool out of service at once
    # Running GPU Job pods on a cordoned node may finish first, up to this long (0: evict at once).
    job_grace_seconds: int = Field(default=1800, ge=0, le=7 * 86400)
    # `kubectl drain --timeout`: evictions a PodDisruptionBudget refuses are retried until then.
    drain_timeout_seconds: int = Field(default=900, ge=30, le=86400)
    # A node that will not drain: stop the upgrade there (cordoned, named in the error), skip it
    # (uncordoned, left on its old minor: allowed by the skew policy), or delete its pods anyway.
    on_drain_failure: Literal["stop", "skip", "force"] = "stop"
    node_ready_timeout_seconds: int = Field(default=900, ge=60, le=7200)


class SnapPinSettings(_Model):
    """The cluster's k8s snap, installed exactly on every node (ADR 0039): k8sd refuses a control
    plane on another patch. `version` is `snap list k8s`'s Version (the Kubernetes patch); a
    revision is per CPU architecture (`snap list k8s`'s Rev on a node of that architecture)."""

    version: str = Field(pattern=r"^v\d+\.\d+\.\d+$")
    revisions: dict[Literal["amd64", "arm64"], Annotated[int, Field(ge=1, le=INT64_MAX)]] = Field(min_length=1)
    # The node images (controlPlane.ami, nodePools[].ami) carry this revision's snap and its
    # assertions, built by the image program (images/, docs/adr/0043): nodes install it from the
    # disk, never from the Snap Store. false: from the store at boot (needs egress).
    from_image: bool = False

    @model_validator(mode="before")
    @classmethod
    def _strict_revisions(cls, data: Any) -> Any:
        # A revision is a store number: no booleans, no strings coerced into one.
        revs = data.get("revisions") if isinstance(data, dict) else None
        if isinstance(revs, dict):
            bad = [k for k, v in revs.items() if type(v) is not int or v < 1]
            if bad:
                paths = ", ".join(f"revisions.{k}" for k in bad)
                raise ValueError(f"{paths}: a snap revision is a whole number from 1")
        return data


class KubernetesSettings(_Model):
    track: str = pins.DEFAULT_TRACK
    # None: every node installs what the channel serves at its boot (and may join on another patch).
    snap: SnapPinSettings | None = None
    upgrade: UpgradeSettings = UpgradeSettings()
    features: FeatureSettings = FeatureSettings()
    # Stop the snap refreshing inside its track behind our back; upgrades are deliberate.
    hold_snap_refresh: bool = True
    # Extra feature gates, e.g. ["DynamicResourceAllocation=true"] to run DRA on 1.32/1.33.
    feature_gates: tuple[str, ...] = ()
    pod_cidr: str = "10.1.0.0/16"
    service_cidr: str = "10.152.183.0/24"


class ControlPlaneSettings(_Model):
    count: int = 1
    instance_type: str = "m7i.xlarge"
    # The control planes' image: an AMI id or an SSM parameter path (an image program image:
    # images/, role control-plane); null: Canonical's Ubuntu 24.04 AMI of the region.
    ami: str | None = None
    root_volume_gib: int = Field(default=100, ge=30, le=16384, alias="rootVolumeGiB")
    api_load_balancer: Literal["internal", "internet-facing"] = "internal"


class Taint(_Model):
    key: str = Field(min_length=1)
    value: str = ""
    effect: TaintEffect = "NoSchedule"


class GpuFactsSettings(_Model):
    """GPU facts for an instance type the built-in table does not know."""

    count: int = Field(ge=1, le=64)
    product_name: str = Field(min_length=1)
    memory_gib: int = Field(ge=1, le=QUANTITY_MAX_GIB, alias="memoryGiB")
    mig_capable: bool = False


DEFAULT_GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")

PlacementStrategy = Literal["cluster", "partition", "spread"]
AZ_NAME = r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d(-[a-z]+-\d)?[a-z]$"  # us-east-1a, Local Zone us-east-1-dfw-2a


class PlacementSettings(_Model):
    """An EC2 placement group of the pool's own (aws). AWS's limits on it are refused by
    components/settings/rules/ (docs/distributed-training.md lists them with their sources)."""

    strategy: PlacementStrategy = "cluster"
    # partition: how many partitions (AWS: at most 7 per Availability Zone); null: 7.
    partition_count: int | None = Field(default=None, ge=1, le=7)
    # spread: `rack` (the only level outside Outposts); null: AWS's default (rack).
    spread_level: Literal["rack", "host"] | None = None
    # An existing placement group to launch in instead of making one: the cluster placement group
    # an On-Demand Capacity Reservation was created in (AWS reserves cluster-group capacity only in
    # that group). Its strategy is then `strategy` as declared here (preflight reads the real one).
    group_name: str | None = Field(default=None, min_length=1, max_length=255, pattern=r"^[\x20-\x7e]+$")


class CapacityReservationSettings(_Model):
    """Reserved capacity the pool launches into (aws): an On-Demand Capacity Reservation (`id`, or a
    Capacity Reservation resource group `resourceGroupArn`) or a Capacity Block for ML
    (`marketType: capacity-block`, `id` of the block). Reservations live in one Availability Zone:
    the pool then launches only in `nodePools[].availabilityZone`."""

    id: str | None = Field(default=None, pattern=r"^cr-[0-9a-f]{8}([0-9a-f]{9})?$")
    resource_group_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[A-Za-z0-9_.-]{1,300}$")
    market_type: Literal["on-demand", "capacity-block"] = "on-demand"
    # A Capacity Block's start (ISO 8601, UTC): what `plan --timeline` waits for. The real start
    # is read by `ck8s-gpu preflight`; null: the block is active already.
    starts_at: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$")
    # A Capacity Block's end (ISO 8601, UTC). An autoscaled block pool needs both dates: the
    # autoscaler launches into the block only between them (components/settings/rules/autoscaling.py).
    ends_at: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$")
    # How many instances the reservation `id` holds: AWS's TotalInstanceCount (botocore ec2
    # 2016-11-15 CapacityReservation; CreateCapacityReservation InstanceCount, "Valid range: 1 - 1000",
    # grown by ModifyCapacityReservation beyond; a Capacity Block's is its offering's InstanceCount,
    # fixed at purchase). The pool's maxSize may not exceed it (components/settings/rules/pools.py);
    # `plan --cost` prices an On-Demand reservation's unused instances from it; `ck8s-gpu preflight`
    # compares it with AWS's. null: not declared. At most a cluster's worth (MAX_CLUSTER_NODES).
    instance_count: int | None = Field(default=None, ge=1, le=5000)

    @property
    def capacity_block(self) -> bool:
        return self.market_type == "capacity-block"

    @property
    def starts(self) -> datetime | None:
        """`startsAt` as an aware datetime; None: the reservation is active already."""
        return parse_utc(self.starts_at) if self.starts_at is not None else None

    @property
    def ends(self) -> datetime | None:
        """`endsAt` as an aware datetime; None: not declared."""
        return parse_utc(self.ends_at) if self.ends_at is not None else None


def parse_utc(text: str) -> datetime:
    """An ISO 8601 UTC time as settings write it (`2026-12-03T08:00Z`), timezone-aware."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# Kubernetes supports clusters of at most 5,000 nodes (kubernetes.io, "Considerations for large
# clusters", docs/setup/best-practices/cluster-large.md): no pool, nor all of them, may be larger.
MAX_CLUSTER_NODES = 5000


# Karpenter's NillableDuration for disruption.consolidateAfter without `Never` (sigs.k8s.io/karpenter
# v1.15.0 pkg/apis/v1/nodepool.go: `^(([0-9]+(s|m|h))+|Never)$`): a pool that never scales down is a
# fixed pool. Budget node counts: the same file's Budget.Nodes pattern.
KARPENTER_DURATION = r"^([0-9]+(s|m|h))+$"
KARPENTER_BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"


class AutoscalingSettings(_Model):
    """The pool's nodes come and go with the work queued for them (aws; docs/autoscaling.md, ADR
    0049): Karpenter launches a node when a pending pod's claims need this pool's GPUs and removes
    it `scaleDownAfter` once it runs nothing. `minSize` nodes stay up regardless (the pool's Auto
    Scaling group keeps them); Karpenter adds at most `maxSize - minSize` beside them."""

    min_size: int = Field(default=0, ge=0, le=MAX_CLUSTER_NODES)
    max_size: int = Field(ge=1, le=MAX_CLUSTER_NODES)
    # How long a node of the pool stays after its last pod left (NodePool disruption.consolidateAfter).
    scale_down_after: str = Field(default="10m", pattern=KARPENTER_DURATION)
    # WhenEmpty: only nodes that run nothing go (a GPU job is never moved to pack nodes tighter);
    # WhenEmptyOrUnderutilized also replaces or packs nodes whose pods fit elsewhere.
    consolidation: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = "WhenEmpty"
    # At most this many of the pool's nodes (or percent) are disrupted at once (NodePool budgets).
    disruption_budget: str = Field(default="1", pattern=KARPENTER_BUDGET_NODES)
    # A node older than this is replaced (NodePool template expireAfter); null: never. Expiry is
    # forceful (it does not wait for a running job), hence off by default for GPU pools.
    expire_after: str | None = Field(default=None, pattern=KARPENTER_DURATION)


class MigLayoutSettings(_Model):
    """How the pool's GPUs are cut (issue 43, docs/sharing.md): every GPU of every node the same.
    Exactly one of: `config`, a layout by the MIG manager's names (all-disabled, all-balanced,
    all-<profile> at the most instances, `+` spelt `.`: all-1g.10gb, all-1g.10gb.me); `devices`,
    the profiles of one GPU and how many of each (components/tables/mig_profiles.py judges them
    against the pool's GPU)."""

    config: str | None = Field(default=None, min_length=1, max_length=64)
    # At most 7 instances of any profile fit one GPU (7 compute slices: components/tables/mig_profiles.py).
    devices: dict[str, Annotated[int, Field(ge=1, le=7)]] | None = Field(default=None, min_length=1, max_length=8)


class NodePoolSettings(_Model):
    name: str = Field(pattern=DNS_LABEL)
    instance_type: str = "g6.xlarge"
    # At most a cluster's worth (MAX_CLUSTER_NODES): structural, so nothing expands an absurd size
    # before the platform's own bound (components/settings/limits.py) is judged.
    min_size: int = Field(default=1, ge=0, le=MAX_CLUSTER_NODES)
    desired_size: int = Field(default=1, ge=0, le=MAX_CLUSTER_NODES)
    max_size: int = Field(default=2, ge=0, le=MAX_CLUSTER_NODES)
    capacity_type: CapacityType = "on-demand"
    root_volume_gib: int = Field(default=200, ge=50, le=16384, alias="rootVolumeGiB")
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = (DEFAULT_GPU_TAINT,)
    gpu: GpuFactsSettings | None = None
    # aws: the pool's image instead of Canonical's Ubuntu 24.04 AMI. An `ami-` id (one region), or
    # the path of an SSM parameter holding one (`/...`, looked up in the stack's region at every
    # `up`). Required with gpuStack.driver host (the image carries the driver) and precompiled (the
    # image's kernel must have NVIDIA's image); docs/adr/0018 lists what the image must hold.
    # Other platforms make no nodes and ignore it.
    ami: str | None = None
    # aws: leave the group's desired capacity to an autoscaler (Cluster Autoscaler, Karpenter-like
    # tools, people): `up` sets it on create and never resets it (pulumi-eks' ignoreScalingChanges).
    ignore_scaling_changes: bool = False
    # aws: EFA interfaces in AWS's layout for the type (components/facts/efa.py); null: on where the
    # type has EFA and an NVLink interconnect (the training types) and the pool may hold > 1 node.
    efa: bool | None = None
    # aws: the pool's own placement group; null: `cluster` where EFA is on (and no Capacity Block,
    # which AWS places itself), else none.
    placement: PlacementSettings | None = None
    capacity_reservation: CapacityReservationSettings | None = None
    # aws: launch only in this Availability Zone (its private subnet); required with a capacity
    # reservation or a cluster placement group, which live in one zone. null: every zone.
    availability_zone: str | None = Field(default=None, pattern=AZ_NAME)
    # aws: nodes launched by the autoscaler for pending GPU work instead of a fixed group size;
    # minSize/desiredSize/maxSize of the pool are then not set (autoscaling.minSize/maxSize are).
    autoscaling: AutoscalingSettings | None = None
    # The pool's MIG layout, applied by the GPU Operator's MIG manager through the node label
    # nvidia.com/mig.config the nodes join with; null: whole GPUs (the operator's all-disabled).
    mig: MigLayoutSettings | None = None

    @property
    def cuts_gpus(self) -> bool:
        """Whether the MIG layout cuts the pool's GPUs into instances: it then hands out MIG devices
        only, never a whole GPU (the DRA driver publishes a GPU in MIG mode as its MIG devices alone:
        dra-driver-nvidia-gpu 95932046 cmd/gpu-kubelet-plugin/nvlib.go enumerateAllPossibleDevices)."""
        m = self.mig
        return m is not None and (bool(m.devices) or (m.config is not None and m.config != "all-disabled"))

    @property
    def start_size(self) -> int:
        """Nodes the pool has after `up` with no work queued: its desired size, or an autoscaled
        pool's autoscaling.minSize (the Auto Scaling group's size; Karpenter adds the rest)."""
        return self.autoscaling.min_size if self.autoscaling is not None else self.desired_size

    @property
    def max_nodes(self) -> int:
        """The most nodes the pool ever has: maxSize, or an autoscaled pool's autoscaling.maxSize."""
        return self.autoscaling.max_size if self.autoscaling is not None else self.max_size

    @property
    def start_size_key(self) -> str:
        """The field (under the pool) that sets start_size, as a stack file spells it."""
        return "autoscaling.minSize" if self.autoscaling is not None else "desiredSize"

    @property
    def max_nodes_key(self) -> str:
        """The field (under the pool) that sets max_nodes, as a stack file spells it."""
        return "autoscaling.maxSize" if self.autoscaling is not None else "maxSize"

    @property
    def on_capacity_block(self) -> bool:
        """Whether the pool launches into a Capacity Block for ML (AWS places and starts it)."""
        return self.capacity_reservation is not None and self.capacity_reservation.capacity_block


class AddonSettings(_Model):
    """Per add-on switch. `enabled: null` means the platform's default (see addons catalog)."""

    enabled: bool | None = None
    version: str | None = None
    # A Helm repository (https://, http:// or oci://) mirroring the chart: the same chart name at
    # `version` (else the pinned one). Air-gapped sites; checked by settings.rules.
    repository: str | None = None
    # Merged over the computed values; cross-field rules still apply to the result.
    values: dict[str, Any] = Field(default_factory=dict)


class InferenceGatewaySettings(AddonSettings):
    """The inference gateway add-on (components/addons/inference_gateway.py, ADR 0052)."""

    # Where the Gateway API CRDs come from: a copy of the pinned release's standard-install.yaml
    # (an air-gapped site's mirror). null: the release asset upstream (pins.GATEWAY_API_CRDS_URL).
    # Each CRD must carry that release's bundle-version annotation: another release is refused.
    gateway_api_crds: str | None = Field(default=None, pattern=r"^https?://\S+$", max_length=2048)


class GangGateSettings(AddonSettings):
    """The gang gate add-on (components/addons/gang_gate.py, ADR 0058): keeps a KAI gang's pods gated
    until the autoscaled pools can hold the whole gang."""

    # The image carrying /usr/bin/ck8s-gang-gate (tools/probe_image.py --gang-gate), pinned by
    # digest like every image; this project publishes no image, so the site pushes it.
    image: str | None = Field(default=None, pattern=IMAGE_BY_DIGEST)


class AddonsSettings(_Model):
    gpu_operator: AddonSettings = AddonSettings()
    dra_driver: AddonSettings = AddonSettings()
    kai_scheduler: AddonSettings = AddonSettings()
    kai_queues: AddonSettings = AddonSettings()
    observability: AddonSettings = AddonSettings()
    kube_prometheus_stack: AddonSettings = AddonSettings()
    fake_gpu_operator: AddonSettings = AddonSettings()
    aws_cloud_controller_manager: AddonSettings = AddonSettings()
    velero: AddonSettings = AddonSettings()
    efa_device_plugin: AddonSettings = AddonSettings()
    karpenter: AddonSettings = AddonSettings()
    karpenter_nodepools: AddonSettings = AddonSettings()
    kuberay_operator: AddonSettings = AddonSettings()
    kuberay_admission: AddonSettings = AddonSettings()
    keda: AddonSettings = AddonSettings()
    inference_gateway: InferenceGatewaySettings = InferenceGatewaySettings()
    gang_gate: GangGateSettings = GangGateSettings()

    def by_key(self) -> Iterator[tuple[str, AddonSettings]]:
        """(key as a stack file spells it, e.g. `gpuOperator`; that add-on's settings), every add-on."""
        for name in type(self).model_fields:
            yield to_camel(name), getattr(self, name)


class TopologyLevelSettings(_Model):
    node_label: str = Field(min_length=1, max_length=316)
    alias: str | None = Field(default=None, min_length=1, max_length=316)


# What the AWS cloud controller manager labels nodes with (cloud-provider-aws v1.34.0, the pinned
# chart's appVersion: pkg/providers/v1/well_known_labels.go LabelNetworkNodePrefix, written by
# instances_v2.go getAdditionalLabels from ec2:DescribeInstanceTopology, one label per layer the
# answer has) plus the standard zone and hostname labels, broadest first. KAI counts a node in a
# Topology only when it carries EVERY level's label (KAI v0.17.0 pkg/scheduler/plugins/topology/
# common.go isNodePartOfTopology): no optional fourth layer here, which most types lack.
AWS_TOPOLOGY_LEVELS: tuple[TopologyLevelSettings, ...] = (
    TopologyLevelSettings(node_label="topology.kubernetes.io/zone", alias="zone"),
    TopologyLevelSettings(node_label="topology.k8s.aws/network-node-layer-1", alias="network-layer-1"),
    TopologyLevelSettings(node_label="topology.k8s.aws/network-node-layer-2", alias="network-layer-2"),
    TopologyLevelSettings(node_label="topology.k8s.aws/network-node-layer-3", alias="network-layer-3"),
    TopologyLevelSettings(node_label="kubernetes.io/hostname", alias="host"),
)


class TopologySettings(_Model):
    """The KAI `Topology` (kai.scheduler/v1alpha1) workloads name to be placed close together."""

    # null: on with KAI on aws (the CCM writes the labels).
    enabled: bool | None = None
    name: str = Field(default="aws-network", pattern=DNS_LABEL)
    # null: AWS_TOPOLOGY_LEVELS less the network layers some GPU pool's instance type does not get
    # (settings/facts.py topology_levels): KAI leaves a node missing any level's label out of the
    # Topology, so a level only some nodes have would drop the others from every topology-aware gang.
    levels: tuple[TopologyLevelSettings, ...] | None = Field(default=None, min_length=1, max_length=16)


class GpuStackSettings(_Model):
    allocation: Allocation = "dra"
    driver: DriverMode = "operator"
    toolkit: ToolkitMode = "operator"
    dra_managed_by: DraManager = "chart"
    mig_strategy: MigStrategy = "none"
    # NVIDIA ComputeDomains (multi-node NVLink, IMEX) from the DRA driver. null: on where a pool
    # has multi-node NVLink (GB200-class: components/tables/instance_types.py), off elsewhere.
    compute_domains: bool | None = None
    # DRA device health (docs/smoke-test.md "gpuHealth"): the driver's NVMLDeviceHealthCheck taints
    # unhealthy GPUs; Kubernetes' DRADeviceTaints (and, before it is beta, the API version serving
    # DeviceTaintRule) on the control plane: components/facts/feature_gates.py. null: on where the track
    # has DRADeviceTaints on by default (beta), off where it is alpha; refused where it is absent.
    gpu_health: bool | None = None
    # The driver's FabricManagerPartitioning (alpha, driver >= 0.5): NVSwitch partitions published as
    # gpu.nvidia.com/partition<N> and activated on prepare for exactly the claimed GPUs. Needs Fabric
    # Manager in shared-NVSwitch mode (FABRIC_MODE=1) on the nodes: off unless asked.
    nvlink_partitions: bool = False
    addons: AddonsSettings = AddonsSettings()
    topology: TopologySettings = TopologySettings()
    # Capabilities the cluster has from outside this stack, e.g. [monitoring-crds] where a
    # Prometheus Operator already runs: add-ons that need them (observability) then install.
    cluster_provides: tuple[ClusterCapability, ...] = ()


class QueueResource(_Model):
    # charts/kai-queues/values.schema.json holds the same bounds; here they fail before any file is
    # written. NaN and infinities are no numbers KAI's Queue CRD (or JSON) can carry.
    quota: float = Field(default=-1, ge=-1, allow_inf_nan=False)  # -1 = unlimited
    limit: float = Field(default=-1, ge=-1, allow_inf_nan=False)
    over_quota_weight: float = Field(default=1, ge=0, allow_inf_nan=False)


class QueueSettings(_Model):
    # KAI counts a DRA claim against `gpu` only when its DeviceClass name contains "gpu"
    # (v0.17.0 pkg/common/resources/dra.go): MIG claims (mig.nvidia.com) escape this quota.
    name: str = Field(pattern=DNS_LABEL)
    parent: str | None = None
    display_name: str | None = None
    # KAI v0.17.0 pkg/apis/scheduling/v2/queue_types.go: higher first, unset means 100. A negative
    # number only sorts below 0 (and reads like -1 "unlimited" of the quotas): 0 up to the int32 max.
    priority: int | None = Field(default=None, ge=0, le=2**31 - 1)
    gpu: QueueResource = QueueResource()
    cpu: QueueResource = QueueResource()
    memory: QueueResource = QueueResource()


DEFAULT_QUEUES: tuple[QueueSettings, ...] = (
    QueueSettings(name="gpu-root", display_name="All GPU work"),
    QueueSettings(name="default", parent="gpu-root", display_name="Default"),
    QueueSettings(name="smoke-test", parent="gpu-root", display_name="Platform smoke test", priority=100),
)


# A message size as nccl-tests' -b/-e take it (v2.18.3 src/common.cu parsesize: a number, then K, M or G
# in powers of 1024); whole numbers only here, so the sizes compare exactly.
NCCL_SIZE = r"^[1-9][0-9]{0,11}[KMG]?$"


class AllReduceSettings(_Model):
    """Smoke case `allReduce` (docs/smoke-test.md): all_reduce_perf (nccl-tests) across `nodes` whole
    nodes of one pool, over EFA, gang-scheduled by KAI within one topology domain. Off unless asked."""

    enabled: bool = False
    # The pool whose nodes run it; null: the first pool with EFA on.
    pool: str | None = Field(default=None, pattern=DNS_LABEL)
    nodes: int = Field(default=2, ge=2, le=64)
    # nccl-tests with MPI and the AWS OFI NCCL plugin, pinned by digest; null: the pin (components/tables/pins.py).
    image: str | None = Field(default=None, pattern=IMAGE_BY_DIGEST)
    # GB/s (gigabytes, nccl-tests' busbw unit); null: the instance type's floor in
    # components/smoke/all_reduce.py, each with its published source.
    min_bus_bandwidth_gbps: float | None = Field(default=None, gt=0, le=100000, allow_inf_nan=False,
                                                 alias="minBusBandwidthGBps")
    # A level of the KAI Topology (gpuStack.topology), by alias or node label.
    topology_level: str = Field(default="network-layer-3", min_length=1, max_length=316)
    placement: Literal["required", "preferred"] = "required"
    # all_reduce_perf -b/-e (factor 2 between): large sizes only, where busbw reaches the network's rate.
    min_bytes: str = Field(default="1G", pattern=NCCL_SIZE)
    max_bytes: str = Field(default="2G", pattern=NCCL_SIZE)


class NvlinkGroupSettings(_Model):
    """Smoke case `nvlinkGroup`: one pod holding `gpus` GPUs of one NVLink (NVSwitch) partition in one
    claim (count + matchAttribute gpu.nvidia.com/partition<gpus>). Off unless asked."""

    enabled: bool = False
    # A Fabric Manager partition size of an 8-GPU HGX baseboard (1, 2, 4 or 8 GPUs).
    gpus: int = Field(default=8, ge=1, le=8)
    # The pool whose nodes run it; null: smokeTest.pool, else the first pool with NVSwitch GPUs.
    pool: str | None = Field(default=None, pattern=DNS_LABEL)


class ComputeDomainCaseSettings(_Model):
    """Smoke case `computeDomain`: a ComputeDomain (resource.nvidia.com/v1beta1) across `nodes` nodes,
    one pod per node joining its IMEX channel. Off unless asked."""

    enabled: bool = False
    nodes: int = Field(default=2, ge=2, le=18)
    # The pool whose nodes run it; null: smokeTest.pool, else the first pool with multi-node NVLink.
    pool: str | None = Field(default=None, pattern=DNS_LABEL)


class FirstAvailableSettings(_Model):
    """Smoke case `firstAvailable` (DRAPrioritizedList): one claim preferring the GPU model of
    `preferredPool` and accepting any GPU otherwise; a pod on each pool. Off unless asked."""

    enabled: bool = False
    preferred_pool: str | None = Field(default=None, pattern=DNS_LABEL)
    fallback_pool: str | None = Field(default=None, pattern=DNS_LABEL)


class InferenceCaseSettings(_Model):
    """Smoke case `inference` (docs/inference.md, components/smoke/cases/inference.py): two backends
    of the model-server stand-in (`stable` and `canary`), each replica with its own GPU through a
    claim, behind the inference gateway's Gateway; a weighted split and a header route through it;
    the stable backend autoscaled by KEDA on the server's own queue metric, which Prometheus
    discovers through the case's PodMonitor. Off unless asked; needs the project-built probe image
    (smokeTest.image), which carries the stand-in."""

    enabled: bool = False
    # Requests of the weighted split through the gateway, and the canary backend's share of them.
    requests: int = Field(default=200, ge=50, le=5000)
    canary_percent: int = Field(default=20, ge=5, le=95)
    # How far the stable backend scales out on the driven queue (from one replica) and back.
    max_replicas: int = Field(default=2, ge=2, le=8)
    # The Prometheus KEDA's trigger queries; null: kube-prometheus-stack's in-cluster Service.
    prometheus_url: str | None = Field(default=None, pattern=r"^https?://[A-Za-z0-9.\-\[\]:]+(/[^\s]*)?$")


class SmokeTestSettings(_Model):
    # null = on where it can prove something: the DRA allocation path (allocation dra).
    enabled: bool | None = None
    namespace: str = Field(default="gpu-smoke-test", pattern=DNS_LABEL)
    # Number of single-GPU pods; each must get a distinct GPU.
    gpus: int = Field(default=1, ge=1, le=256)
    device_class: str = "gpu.nvidia.com"
    # CEL selectors derived from these; null = no constraint.
    product_name_pattern: str | None = None
    min_memory_gib: int | None = Field(default=None, ge=1, le=QUANTITY_MAX_GIB, alias="minMemoryGiB")
    scheduler: Scheduler = "kai"
    queue: str = "smoke-test"
    # The cases (docs/smoke-test.md says what each proves). `wholeGpu`: the `gpus` single-GPU pods;
    # false on clusters whose GPUs are all MIG-partitioned, where no whole GPU can be allocated
    # (then the MIG case is the one that proves the path, and no other case may ask for whole GPUs).
    # Unset, it is false where every pool the smoke pods may use has a MIG layout that cuts its GPUs.
    whole_gpu: bool = True
    shared_claim: bool = False  # one pod, two containers, one claim from a template
    # Two pods of one Job naming one ResourceClaim object (NVIDIA's demo gpu-test3).
    shared_named_claim: bool = False
    gang: bool = False
    # null: on when migProfile names a profile or a pool's MIG layout cuts its GPUs (one pod per
    # profile of each such pool's layout, on that pool: components/smoke/cases/mig.py).
    mig: bool | None = None
    # The MIG profile the MIG case asks for, as the DRA driver publishes it (`1g.10gb`, `1c.2g.20gb`,
    # `1g.10gb+me`); null: any MIG device. Syntax checked by settings.rules.
    mig_profile: str | None = Field(default=None, min_length=1, max_length=64)
    # GPU sharing on the shared cases' claims: NVIDIA's opaque GpuConfig (demo gpu-test5). The DRA
    # driver add-on then turns on the feature gate the strategy needs (components/addons/dra_driver.py).
    sharing: Literal["none", "timeSlicing", "mps"] = "none"
    # GpuConfig sharing.timeSlicingConfig.interval (sharing timeSlicing); null: the driver's Default.
    time_slicing_interval: Literal["Default", "Short", "Medium", "Long"] | None = None
    # GpuConfig sharing.mpsConfig (sharing mps): the MPS daemon's default active thread percentage
    # and pinned device memory limit (MiB); null: MPS' own defaults.
    mps_active_thread_percentage: int | None = Field(default=None, ge=0, le=100)
    mps_pinned_memory_limit_mib: int | None = Field(default=None, ge=1, le=QUANTITY_MAX_MIB,
                                                    alias="mpsPinnedMemoryLimitMiB")
    timeout_seconds: int = Field(default=900, ge=60, le=7200)
    # Change this value to re-run the smoke test without touching anything else.
    trigger: str = ""
    # Air-gapped sites: pull the pinned smoke-test image (same path and digest) from this mirror.
    registry: str | None = Field(
        default=None, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$"
    )
    # Secrets (kubernetes.io/dockerconfigjson) in the smoke namespace that authenticate the pull,
    # for a mirror that needs credentials. Not created here: the namespace must hold them when the
    # Jobs start (a secret replicator, or `kubectl create secret docker-registry` after the first up).
    image_pull_secrets: tuple[str, ...] = Field(default=(), max_length=8)
    # The probe image instead of the pinned one (components/tables/pins.py), pinned by digest like every
    # image: `<repository>:<tag>@sha256:<64 hex>`. CI's node tier imports a locally built image.
    image: str | None = Field(default=None, pattern=IMAGE_BY_DIGEST)
    # Run the pods on this GPU pool's nodes only (a nodeSelector on the pool label); null: any GPU
    # node. On `local` with kubelet pools it defaults to the first of them (KWOK nodes run nothing).
    pool: str | None = Field(default=None, pattern=DNS_LABEL)
    # A pod held this long at one failing hop (its claim not prepared, its image not pulled, its
    # container refused by the runtime) ends the run at once, naming the hop, instead of waiting
    # out timeoutSeconds. Short blips (a plugin restarting) recover well within the default.
    stuck_seconds: int = Field(default=120, ge=5, le=3600)
    all_reduce: AllReduceSettings = AllReduceSettings()
    nvlink_group: NvlinkGroupSettings = NvlinkGroupSettings()
    compute_domain: ComputeDomainCaseSettings = ComputeDomainCaseSettings()
    first_available: FirstAvailableSettings = FirstAvailableSettings()
    inference: InferenceCaseSettings = InferenceCaseSettings()
    # Smoke case `gpuHealth`: no device the driver tainted goes to a claim without a toleration.
    # null: on exactly when gpuStack.gpuHealth is (effectively) on.
    gpu_health: bool | None = None


class ExistingNetwork(_Model):
    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]{8,17}$")
    private_subnet_ids: tuple[str, ...]
    public_subnet_ids: tuple[str, ...] = ()


class NetworkSettings(_Model):
    vpc_cidr: str = "10.0.0.0/16"
    az_count: int = Field(default=2, ge=2, le=3)
    # The zones of the new VPC's subnets, by name (`azCount` of them); null: the region's first
    # `azCount` available zones. A pool's `availabilityZone` must be one of them.
    availability_zones: tuple[str, ...] | None = None
    existing: ExistingNetwork | None = None
    # CIDRs that may reach the Kubernetes API (6443) through the load balancer.
    api_allow_list: tuple[str, ...] = ()
    # `none`: a new VPC without NAT gateways; its nodes reach AWS's APIs only through VPC endpoints
    # (needs endpoints: create) and reach NOTHING outside AWS: no Snap Store (the k8s snap), no
    # public image registry, no off-region backup bucket, unless the node images carry them (offline, ADR 0043).
    nat_gateways: Literal["single", "per-az", "none"] = "single"
    # VPC endpoints for the AWS APIs the nodes call (components/aws/endpoints.py, docs/adr/0041):
    # `create` makes them in the private subnets; `expect` relies on ones an existing VPC already
    # has (`ck8s-gpu preflight` checks them); `off`: the subnets reach AWS through NAT or other egress.
    endpoints: Literal["off", "create", "expect"] = "off"


MIRROR = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
MirrorUpstream = Literal["docker.io", "ghcr.io", "nvcr.io", "public.ecr.aws", "quay.io", "registry.k8s.io"]


class ImagesSettings(_Model):
    """Where the nodes' containerd and every pod get their images (docs/adr/0043).

    `mirror`: every image is pulled as `<mirror>/<upstream host>/<repository>:<tag>`; chart values
    name it so, and k8s-snap's containerd redirects each upstream host there (hosts.toml), so no
    pod pulls from a public registry. `preloaded`: the node images carry every image of the stack
    in containerd's side-load folder (the image program, images/), so a pod starts without a pull."""

    mirror: str | None = Field(default=None, pattern=MIRROR, max_length=255)
    # aws: make Amazon ECR pull-through cache rules for the upstreams ECR can cache, one per
    # upstream host as its repository prefix; `mirror` is then this account's ECR in the region.
    pull_through_cache: Literal["off", "create"] = "off"
    # Secrets Manager secret ARNs (names under ecr-pullthroughcache/) for the upstreams whose
    # pull-through cache rule needs credentials (ECR User Guide, pull-through-cache-creating-secret).
    credentials: dict[Literal["docker.io", "ghcr.io"], str] = Field(default_factory=dict)
    preloaded: bool = False


class ProtectionSettings(_Model):
    """What a disaster-recovery rebuild must not lose: applied to state-bearing resources."""

    protect: bool = False
    retain_on_delete: bool = False


class RestoreSource(_Model):
    """A lost cluster's backups, read-only: its Velero bucket in its backup region (DR rebuilds)."""

    cluster_name: str = Field(pattern=DNS_LABEL)
    region: str = Field(pattern=r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")


class BackupSettings(_Model):
    """Velero backups to a bucket in ANOTHER region than the cluster."""

    region: str | None = None
    schedule: str = "0 */6 * * *"
    ttl_hours: int = Field(default=720, ge=1, le=DURATION_MAX_HOURS)
    # Set by `ck8s-gpu stamp --restore` / rebuild-plan; the replacement reads the old backups.
    restore_from: RestoreSource | None = None


class LocalSettings(_Model):
    # Pools whose nodes run a real kubelet, containerd and the simulated NVIDIA DRA kubelet plugin
    # (tools/nodetier.py, CI's node tier); the other pools are KWOK nodes, where no container runs.
    kubelet_pools: tuple[str, ...] = Field(default=(), max_length=8)


class KindSettings(_Model):
    # The AWS pool whose GPUs the simulated nodes mirror (instance type from this stack's pools).
    mirror_pool: str | None = None
    cluster_name: str = Field(default="ck8s-gpu", pattern=DNS_LABEL)


class AmiSelectorTerm(_Model):
    """One of an EC2NodeClass's spec.amiSelectorTerms (github.com/aws/karpenter-provider-aws v1.15.0
    pkg/apis/v1/ec2nodeclass.go AMISelectorTerm): exactly one of `id`, `ssmParameter` (a path,
    resolved by Karpenter at launch and re-read) or `tags` (components/settings/rules/existing_aws.py)."""

    id: str | None = None
    ssm_parameter: str | None = None
    tags: dict[str, str] | None = None


class Ec2SelectorTerm(_Model):
    """One of an EC2NodeClass's spec.subnetSelectorTerms or securityGroupSelectorTerms
    (ec2nodeclass.go SubnetSelectorTerm, SecurityGroupSelectorTerm): exactly one of `id` or `tags`."""

    id: str | None = None
    tags: dict[str, str] | None = None


class ExistingAwsSettings(_Model):
    """An existing cluster whose nodes are EC2 instances (platform existing; docs/autoscaling.md, "On
    an existing cluster"): what Karpenter needs to launch an autoscaled pool's nodes there, because
    this program did not make the cluster and cannot know how an instance joins it. The node class
    fields are the EC2NodeClass's own (ec2nodeclass.go at v1.15.0), given verbatim to each autoscaled
    pool's class with amiFamily Custom; the rules a CRD would apply are judged at the settings
    (components/settings/rules/existing_aws.py), with every bad path in one message."""

    # Karpenter's settings.clusterEndpoint: the API server URL your nodes join (https).
    cluster_endpoint: str
    # The role inside `instanceProfile` (arn:aws:iam::<account>:role/...): the controller passes it
    # to EC2 (iam:PassRole), and the controller policy `plan` writes is scoped to its account.
    node_role_arn: str
    # An existing instance profile the nodes launch with (EC2NodeClass spec.instanceProfile). Not
    # `role`: Karpenter would then create profiles, which needs IAM writes the policy leaves out.
    instance_profile: str
    ami_selector_terms: tuple[AmiSelectorTerm, ...]
    subnet_selector_terms: tuple[Ec2SelectorTerm, ...]
    security_group_selector_terms: tuple[Ec2SelectorTerm, ...]
    # How an instance joins your cluster, passed verbatim (amiFamily Custom: pkg/providers/amifamily/
    # custom.go). EC2 shows user-data in plain text: no credential in it (the rules judge it).
    user_data: str
    # spec.tags: put on every instance, volume and interface Karpenter launches for these pools.
    tags: dict[str, str] = Field(default_factory=dict)


# Words of an environment name that read as production: such a stack must say `production`
# explicitly (components/settings/rules/), because the policies read the setting, never the name.
PRODUCTION_NAMES = ("prod", "production", "prd", "live")


class Settings(_Model):
    platform: Platform
    environment: str = Field(default="dev", pattern=DNS_LABEL)
    # Whether the production guardrails apply (protection, backups, 3 control planes, no spot, no
    # world-open API). Unset means false, and is refused for an environment named like production.
    production: bool | None = None
    region: str | None = None
    kubernetes: KubernetesSettings = KubernetesSettings()
    control_plane: ControlPlaneSettings = ControlPlaneSettings()
    node_pools: tuple[NodePoolSettings, ...] = (NodePoolSettings(name="gpu"),)
    gpu_stack: GpuStackSettings = GpuStackSettings()
    queues: tuple[QueueSettings, ...] = DEFAULT_QUEUES
    smoke_test: SmokeTestSettings = SmokeTestSettings()
    network: NetworkSettings = NetworkSettings()
    tags: dict[str, str] = Field(default_factory=dict)
    protection: ProtectionSettings = ProtectionSettings()
    backup: BackupSettings | None = None
    kind: KindSettings = KindSettings()
    local: LocalSettings = LocalSettings()
    # platform existing, nodes on AWS: how the autoscaler launches autoscaled pools' nodes there.
    existing_aws: ExistingAwsSettings | None = None
    images: ImagesSettings = ImagesSettings()
    # No node and no pod reaches the internet (docs/adr/0043): the node images carry the snap and
    # every image, the mirror serves what they do not, AWS's APIs come through VPC endpoints.
    offline: bool = False

    @model_validator(mode="after")
    def _derived_defaults(self) -> Settings:
        if self.smoke_test.enabled is None:
            # The model is frozen; this runs once, inside validation, before anyone holds it.
            smoke = self.smoke_test.model_copy(update={"enabled": self.gpu_stack.allocation == "dra"})
            object.__setattr__(self, "smoke_test", smoke)
        if "scheduler" not in self.smoke_test.model_fields_set and self.platform == "local":
            # local installs no internet chart, KAI included: the real kube-scheduler allocates there.
            object.__setattr__(self, "smoke_test", self.smoke_test.model_copy(update={"scheduler": "default"}))
        if self.smoke_test.pool is None and self.local.kubelet_pools:
            # Only the kubelet pools run containers: the in-container checks need the pods there.
            pool = self.local.kubelet_pools[0]
            object.__setattr__(self, "smoke_test", self.smoke_test.model_copy(update={"pool": pool}))
        t, cut = self.smoke_test, [p for p in self.node_pools if p.cuts_gpus]
        update: dict[str, Any] = {}
        if t.mig is None:
            update["mig"] = t.mig_profile is not None or bool(cut)
        reachable = [p for p in self.node_pools if t.pool in (None, p.name)]
        if "whole_gpu" not in t.model_fields_set and reachable and all(p.cuts_gpus for p in reachable):
            update["whole_gpu"] = False  # no whole GPU to ask for: the MIG case proves the path
        if update:
            object.__setattr__(self, "smoke_test", t.model_copy(update=update))
        return self

    @property
    def traits(self) -> PlatformTraits:
        return TRAITS[self.platform]

    @property
    def has_kubelet(self) -> bool:
        """Whether containers really run on the GPU nodes (KWOK nodes run none)."""
        return self.traits.has_kubelet or bool(self.local.kubelet_pools)

    @property
    def is_production(self) -> bool:
        return self.production is True

    @property
    def cluster_name(self) -> str:
        """Unique per (environment, region): used for AWS ownership tags and resource names."""
        return f"ck8s-{self.environment}-{self.region}" if self.region else f"ck8s-{self.environment}"
