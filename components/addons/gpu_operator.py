"""NVIDIA GPU Operator, configured for Canonical Kubernetes' containerd.

Values keys verified against NVIDIA/gpu-operator v26.7.0 (commit 10ee5b3,
deployments/gpu-operator/values.yaml and templates/clusterpolicy.yaml).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import yaml

from ..facts.mig import CONFIG_MAP as MIG_CONFIG_MAP
from ..facts.mig import mig_parted_config, mig_pools
from ..facts.nodes import gpu_tolerations
from ..kube.helm_values import renders_true
from ..settings.facts import compute_domains_on
from ..settings.model import NodePoolSettings, Settings
from ..tables import pins
from ..tables.labels import DRA_NODE_LABEL
from .base import Addon, AddonContext, Capability
from .dra_driver_gates import feature_gates
from .image_refs import NODE_OS_TAG, Entry, ImageRef, always, never

NAMESPACE = "gpu-operator"
CLUSTER_POLICY = "cluster-policy"  # the one ClusterPolicy the chart deploys (clusterPolicy.deployCR)
# Driver root the operator-managed driver container exposes (values hostPaths.driverInstallDir),
# compiled or precompiled alike: both are the driver DaemonSet of assets/state-driver, the
# precompiled one per kernel with the same /run/nvidia mount (controllers/object_controls.go
# transformPrecompiledDriverDaemonset; internal/state/testdata/golden/driver-precompiled.yaml).
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
# A driver installed on the host itself (gpuStack.driver host) lives at the host's root.
HOST_DRIVER_ROOT = "/"


def driver_root(settings: Settings) -> str:
    """Where the NVIDIA driver's files are on a GPU node (the DRA driver's `nvidiaDriverRoot`)."""
    return HOST_DRIVER_ROOT if settings.gpu_stack.driver == "host" else OPERATOR_DRIVER_ROOT

# k8s-snap's containerd: config.toml is owned by k8sd (rewritten on bootstrap/join) and imports
# conf.d/*.toml, so the toolkit writes only a drop-in. RUNTIME_CONFIG_SOURCE=file makes it read
# the root config from the file: otherwise (containerd 2, tracks 1.35+) it can write a drop-in of
# a higher config version than the root config, and containerd refuses to start.
K8S_SNAP_TOOLKIT_ENV: tuple[tuple[str, str], ...] = (
    ("CONTAINERD_CONFIG", "/etc/containerd/config.toml"),
    ("CONTAINERD_SOCKET", "/run/containerd/containerd.sock"),
    ("RUNTIME_DROP_IN_CONFIG", "/etc/containerd/conf.d/99-nvidia.toml"),
    ("RUNTIME_CONFIG_SOURCE", "file"),
)


# The NFD subchart's worker keeps its own tolerations: `daemonsets.tolerations` reaches only the
# operator's operands (deployments/gpu-operator/templates/clusterpolicy.yaml), and a list under
# `node-feature-discovery.worker.tolerations` replaces the chart's, so its two are repeated here
# (deployments/gpu-operator/values.yaml at v26.7.0; the worker DaemonSet renders
# `.Values.worker.tolerations`: charts/node-feature-discovery/templates/worker.yaml, NFD 0.19.0).
# Without them a GPU node whose pool has its own taint is never labelled a GPU node, and the
# operator installs nothing there.
NFD_CHART_WORKER_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
)


def nfd_worker_tolerations(settings: Settings) -> list[dict[str, str]]:
    """The chart's NFD worker tolerations plus one for every taint of every GPU pool."""
    out = [dict(t) for t in NFD_CHART_WORKER_TOLERATIONS]
    out += [t for t in gpu_tolerations(settings) if t not in out]
    return out


def _size(pool: NodePoolSettings) -> int:
    return pool.min_size if pool.ignore_scaling_changes else pool.start_size


def _on_dated_block(pool: NodePoolSettings) -> bool:
    cr = pool.capacity_reservation
    return cr is not None and cr.capacity_block and cr.starts_at is not None


def expected_gpu_nodes(settings: Settings) -> int:
    """GPU nodes the ClusterPolicy gate waits for: every pool at the size `up` sets (an
    autoscaler-owned pool at its minimum), and at least one: a ready operator with no GPU node
    (reason NoGPUNodes) has installed nothing; zero only where every GPU node is the autoscaler's.
    Pools on a Capacity Block with a start date are counted by the gate itself once the block has
    started (later_gpu_nodes): before that AWS launches none of their nodes."""
    total = sum(_size(p) for p in settings.node_pools if not _on_dated_block(p))
    if total == 0 and any(p.autoscaling is not None for p in settings.node_pools):
        # Every GPU node comes from the autoscaler, for queued work: none may exist yet, and the
        # operator's verdict then is ready/NoGPUNodes (cluster_policy_ready.status_problems).
        return 0
    return max(1, total)


def later_gpu_nodes(settings: Settings) -> tuple[tuple[int, str], ...]:
    """(nodes, startsAt) of each pool on a Capacity Block with a start date."""
    return tuple((_size(p), p.capacity_reservation.starts_at) for p in settings.node_pools
                 if _on_dated_block(p) and p.capacity_reservation and p.capacity_reservation.starts_at)


def operator_digest(version: str, values: dict[str, Any]) -> str:
    """One digest of what the operator consumes from this program: a change re-runs its gate."""
    doc = json.dumps({"version": version, "values": values}, sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()[:16]


# The operand switches, one derivation: `values` sets them and the image entries below say which
# operand images run by them.
def _driver_compiled(s: Settings) -> bool:
    return s.gpu_stack.driver == "operator"


def _driver_precompiled(s: Settings) -> bool:
    return s.gpu_stack.driver == "precompiled"


def _driver_on(s: Settings) -> bool:
    # host: the driver is in the node image; the operator must not install one over it.
    return s.gpu_stack.driver != "host"


def _toolkit_on(s: Settings) -> bool:
    # host: the node image carries the toolkit (docs/adr/0046).
    return s.gpu_stack.toolkit != "host"


def _device_plugin_on(s: Settings) -> bool:
    # Exactly one whole-GPU advertiser per node: the device plugin only when DRA does not allocate GPUs.
    return s.gpu_stack.allocation != "dra"


def _mig_manager_on(s: Settings) -> bool:
    return s.gpu_stack.mig_strategy != "none" or bool(mig_pools(s))


def mig_manager_values(s: Settings) -> dict[str, Any]:
    """The MIG manager, and with pool layouts the ConfigMap of their configs (components/facts/mig.py):
    the chart creates it from `data` (templates/mig_config.yaml: only with create and data) and the
    ClusterPolicy names it (templates/clusterpolicy.yaml migManager.config.name), which turns off
    mig-manager's own config generated from the hardware."""
    out: dict[str, Any] = {"enabled": _mig_manager_on(s)}
    config = mig_parted_config(s)
    if config is not None:
        out["config"] = {"name": MIG_CONFIG_MAP, "create": True, "default": "all-disabled",
                         "data": {"config.yaml": yaml.safe_dump(config, sort_keys=False)}}
    return out


def manages_dra(s: Settings) -> bool:
    """gpuStack.draManagedBy operator: the GPUCluster, not a ClusterPolicy (docs/adr/0048)."""
    return s.gpu_stack.dra_managed_by == "operator"


def _policy_operand(on: Callable[[Settings], bool]) -> Callable[[Settings], bool]:
    """An operand only a ClusterPolicy deploys (controllers/state_manager.go): none runs under a GPUCluster."""
    return lambda s: on(s) and not manages_dra(s)


GPU_CLUSTER = "gpu-cluster"  # the singleton's name (crds/nvidia.com_gpuclusters.yaml, a CEL rule)


def gpu_cluster_values(ctx: AddonContext) -> dict[str, Any]:
    """The chart's GPUCluster (templates/gpucluster.yaml at v26.7.0) instead of its ClusterPolicy:
    the two may not coexist (templates/validations.yaml fails the render; each controller refuses the
    other). The DRA driver takes the knobs the standalone chart takes: feature gates (rendered as
    FEATURE_GATES), ComputeDomains; its kubelet plugin is scheduled by the operator's own node label
    (`nvidia.com/gpu.deploy.dra-driver`) with `daemonsets.tolerations`. A host driver is at `/`
    (hostPaths.driverInstallDir; the template's default is the driver container's /run/nvidia/driver)."""
    s = ctx.settings
    dra: dict[str, Any] = {"computeDomains": {"enabled": compute_domains_on(s)}}
    if gates := feature_gates(s):
        dra["featureGates"] = gates
    return {
        "clusterPolicy": {"deployCR": False},
        "gpuCluster": {"deployCR": True},
        "draDriver": dra,
        "hostPaths": {"driverInstallDir": driver_root(s)},
    }


def values(ctx: AddonContext) -> dict[str, Any]:
    s = ctx.settings
    dra = s.gpu_stack.allocation == "dra"
    mode = s.gpu_stack.driver
    driver: dict[str, Any] = {"enabled": _driver_on(s)}
    if mode == "precompiled":
        # The image tag becomes <version>-<kernel>-<os tag>, so version is a branch (components/tables/pins.py).
        # Only this mode adds keys: `operator` keeps exactly the values existing stacks had.
        driver["usePrecompiled"] = True
        driver["version"] = pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH
    if dra:
        # Before reloading the driver, the driver manager removes this label so the DRA kubelet
        # plugin (which selects on it) is evicted first, and puts it back afterwards.
        driver["manager"] = {"env": [{"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": DRA_NODE_LABEL}]}
    mig = s.gpu_stack.mig_strategy
    return {
        # containerd 1.6 (track 1.32) cannot do CDI; everything newer can.
        "cdi": {"enabled": ctx.track.cdi},
        "driver": driver,
        "toolkit": toolkit_values(s),
        "devicePlugin": {"enabled": _device_plugin_on(s)},
        "dcgmExporter": {
            "enabled": True,
            # The operator creates the ServiceMonitor itself; without the Prometheus Operator CRDs
            # that object cannot exist, so ask for it only when the CRDs are there.
            "serviceMonitor": {"enabled": "monitoring-crds" in ctx.capabilities},
            **dcgm_pod_mapping(s),
        },
        "mig": {"strategy": mig},
        "migManager": mig_manager_values(s),
        "daemonsets": {"tolerations": gpu_tolerations(s)},
        "node-feature-discovery": {"worker": {"tolerations": nfd_worker_tolerations(s)}},
        # Helm never upgrades a chart's crds/ (ClusterPolicy, NVIDIADriver...): this pre-upgrade
        # hook applies the new version's CRDs before the upgrade (templates/upgrade_crd.yaml).
        # The chart's default, set so that no later default can turn it off unseen.
        "operator": {"upgradeCRD": True},
        # Only with draManagedBy operator: a chart-mode stack keeps exactly the values it had.
        **(gpu_cluster_values(ctx) if manages_dra(s) else {}),
    }


# dcgm-exporter's DRA pod mapping (4.6.0-4.8.3 pkg/cmd/app.go --kubernetes-enable-dra, env
# KUBERNETES_ENABLE_DRA): each allocated device's series names the pod, container and ResourceClaim
# holding it, which is what `ck8s-gpu report utilization` and the idle-GPU alert count as allocated.
# It reads ResourceSlices and pods from the API: the operator mounts the exporter's token only with
# pod metadata on (controllers/object_controls.go, v26.7.0: AutomountServiceAccountToken when
# IsKubernetesPodMetadataEnabled), hence enablePodUID, which also grants pods get/list/watch
# (assets/state-dcgm-exporter/0210_clusterrole.yaml); its ClusterRole has no resourceslices yet
# ("TODO: Add resourceSlices permissions"), so the observability add-on grants them
# (charts/gpu-observability templates/dcgm-exporter-dra-rbac.yaml).
DCGM_DRA_ENV = "KUBERNETES_ENABLE_DRA"
DCGM_SERVICE_ACCOUNT = "nvidia-dcgm-exporter"  # assets/state-dcgm-exporter/0100_service_account.yaml


def dcgm_pod_mapping_on(s: Settings) -> bool:
    """DRA pods exist to be mapped (allocation dra), and the ClusterPolicy's exporter is the one
    running: a GPUCluster runs its own, with DRA mapping already on (nvidia-dcgm-exporter-dra)."""
    return s.gpu_stack.allocation == "dra" and not manages_dra(s)


def dcgm_pod_mapping(s: Settings) -> dict[str, Any]:
    if not dcgm_pod_mapping_on(s):
        return {}
    return {"enablePodUID": True, "env": [{"name": DCGM_DRA_ENV, "value": "true"}]}


def _check(s: Settings) -> tuple[str, ...]:
    """Sandboxed GPU workloads on aws: KubeVirt or Kata VMs on the node, and with them GPU
    confidential computing (the operator's CC manager runs only in that mode: controllers/
    state_manager.go). The chart prints sandboxWorkloads.enabled into the ClusterPolicy
    (templates/clusterpolicy.yaml `enabled: {{ .Values.sandboxWorkloads.enabled }}`)."""
    v = s.gpu_stack.addons.gpu_operator.values.get("sandboxWorkloads")
    if s.platform != "aws" or not isinstance(v, dict) or not renders_true(v.get("enabled")):
        return ()
    # botocore 1.44.18 (pinned) data/ec2/2016-11-15/service-2.json, CpuOptionsRequest: NestedVirtualization
    # "is supported only on 8th generation Intel-based instance types (c8i, m8i, r8i, and their flex
    # variants)"; AmdSevSnp "is supported with M6a, R6a, and C6a instance types only". None has a GPU.
    return ("gpuStack.addons.gpuOperator.values.sandboxWorkloads.enabled: sandboxed GPU workloads run the GPU "
            "in a VM on the node (KubeVirt or Kata), and GPU confidential computing needs that VM in a CPU "
            "TEE: EC2 GPU instances are VMs without nested virtualization (EC2 offers it on c8i, m8i and r8i "
            "only) and AMD SEV-SNP exists on M6a, R6a and C6a only, none with a GPU; no EC2 type offers Intel "
            "TDX. Leave sandboxWorkloads off (docs/conformance.md, confidential containers)",)


def toolkit_values(s: Settings) -> dict[str, Any]:
    """host: the node image carries the toolkit and the node script configured containerd
    (components/aws/scripts/ck8s-node.sh host_toolkit, docs/adr/0046); the operator installs none.
    Its operands still run with runtimeClassName nvidia (controllers/object_controls.go
    setRuntimeClassName) and, with CDI, find nvidia-cdi-hook at the host's /usr/bin
    (NVIDIA_CDI_HOOK_PATH is set only when toolkit.enabled: transformDevicePluginCtrForCDI)."""
    if not _toolkit_on(s):
        return {"enabled": False}
    return {"enabled": True, "env": [{"name": k, "value": v} for k, v in K8S_SNAP_TOOLKIT_ENV]}


def _provides(settings: Settings) -> tuple[Capability, ...]:
    # Under a GPUCluster the operator's DRA driver publishes the GPUs (DeviceClass gpu.nvidia.com).
    return ("gpu-driver", "dra-gpus") if manages_dra(settings) else ("gpu-driver",)


# --- Images: NVIDIA GPU Operator v26.7.0 -----------------------------------------------------------
# NVIDIA/gpu-operator tag v26.7.0 (commit 10ee5b3): deployments/gpu-operator/values.yaml. Each
# operand's image is `<repository>/<image>:<version>` (api/nvidia/v1/clusterpolicy_types.go
# imagePath); operator and validator default `version` to .Chart.AppVersion
# (templates/_helpers.tpl gpu-operator.fullimage, templates/clusterpolicy.yaml), which the release
# sets to the tag (.github/workflows/release-rc-assets.yaml `helm package --app-version`). Which
# operand states run: controllers/state_manager.go isStateEnabled (the sandbox ones only with
# sandboxWorkloads.enabled, false by default). The chart renders every component's repository
# into the ClusterPolicy whether enabled or not, so all are rewritten.
_GPU_OP = "NVIDIA/gpu-operator v26.7.0 (10ee5b3) deployments/gpu-operator/values.yaml"
_GPU_OP_TAG = pins.CHARTS["gpu-operator"].version


def _nv(name: str, key: str, repository: str, tag: str, runs: Callable[[Settings], bool] = always,
        kernel_tagged: bool = False, note: str = "") -> Entry:
    namespace = repository.rsplit("/", 1)[0]  # values `repository`; the last part is `image`
    return Entry(
        "gpu-operator", name, ImageRef("nvcr.io", repository, tag, _GPU_OP, note=note),
        keys=(f"{key}.repository", f"{key}.image", f"{key}.version"),
        mirror=((f"{key}.repository", namespace),), runs=runs, kernel_tagged=kernel_tagged,
    )


IMAGES: tuple[Entry, ...] = (
    # The operator Deployment and its pre-upgrade CRD hook (templates/upgrade_crd.yaml,
    # operator.upgradeCRD) run this image.
    _nv("operator", "operator", "nvidia/gpu-operator", _GPU_OP_TAG),
    # state-operator-validation (always): the validator image is the operator image.
    _nv("validator", "validator", "nvidia/gpu-operator", _GPU_OP_TAG),
    # Compiled in-cluster: controllers/object_controls.go resolveDriverTag appends `-<os tag>`.
    _nv("driver", "driver", "nvidia/driver", f"595.91.07-{NODE_OS_TAG}", runs=_driver_compiled),
    # Precompiled: `<version>-<kernel>-<os tag>` with version the branch (resolveDriverTag).
    _nv("driver-precompiled", "driver", "nvidia/driver", pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH,
        runs=_driver_precompiled, kernel_tagged=True,
        note="tag completed per node: <branch>-<kernel>-<os tag> (resolveDriverTag)"),
    _nv("driver-manager", "driver.manager", "nvidia/cloud-native/k8s-driver-manager", "v0.12.0",
        runs=_driver_on),
    # values.yaml toolkit.version at v26.7.0 is v1.20.0; a host toolkit (gpuStack.toolkit host) is the
    # same release, so the tag is derived from that one pin (tests/unit/addons/test_image_catalog.py
    # checks it against the chart's default).
    _nv("container-toolkit", "toolkit", "nvidia/k8s/container-toolkit", f"v{pins.NVIDIA_CONTAINER_TOOLKIT.version}",
        runs=_policy_operand(_toolkit_on)),
    # The device plugin, and the MPS control daemon (state-mps-control-daemon) with the same image.
    _nv("device-plugin", "devicePlugin", "nvidia/k8s-device-plugin", "v0.20.0",
        runs=_policy_operand(_device_plugin_on)),
    _nv("dcgm-exporter", "dcgmExporter", "nvidia/k8s/dcgm-exporter", "4.6.0-4.8.3-distroless"),
    # GPU feature discovery ships in the device plugin's image: it runs in DRA mode too, under a
    # ClusterPolicy (a GPUCluster deploys none).
    _nv("gfd", "gfd", "nvidia/k8s-device-plugin", "v0.20.0", runs=_policy_operand(always)),
    _nv("mig-manager", "migManager", "nvidia/cloud-native/k8s-mig-manager", "v0.15.0",
        runs=_policy_operand(_mig_manager_on)),
    # Off at the chart's defaults and ours (dcgm.enabled, nodeStatusExporter, gds, gdrcopy,
    # sandbox workloads): rendered, never run.
    _nv("dcgm", "dcgm", "nvidia/cloud-native/dcgm", "4.6.0-1-ubuntu24.04", runs=never),
    _nv("node-status-exporter", "nodeStatusExporter", "nvidia/gpu-operator", _GPU_OP_TAG, runs=never),
    _nv("gds", "gds", "nvidia/cloud-native/nvidia-fs", "2.29.4", runs=never),
    _nv("gdrcopy", "gdrcopy", "nvidia/cloud-native/gdrdrv", "v2.6", runs=never),
    _nv("vgpu-driver-manager", "vgpuManager.driverManager", "nvidia/cloud-native/k8s-driver-manager",
        "v0.12.0", runs=never),
    _nv("vgpu-device-manager", "vgpuDeviceManager", "nvidia/cloud-native/vgpu-device-manager", "v0.5.0",
        runs=never),
    _nv("vfio-manager", "vfioManager", "nvidia/cloud-native/k8s-driver-manager", "v0.12.0", runs=never),
    _nv("vfio-driver-manager", "vfioManager.driverManager", "nvidia/cloud-native/k8s-driver-manager",
        "v0.12.0", runs=never),
    _nv("sandbox-device-plugin", "sandboxDevicePlugin", "nvidia/kubevirt-gpu-device-plugin", "v1.6.0",
        runs=never),
    _nv("kata-sandbox-device-plugin", "kataSandboxDevicePlugin", "nvidia/cloud-native/nvidia-sandbox-device-plugin",
        "v0.0.5", runs=never),
    _nv("cc-manager", "ccManager", "nvidia/cloud-native/k8s-cc-manager", "v0.4.3", runs=never),
    # The GPUCluster's DRA driver (draManagedBy operator): the same 0.5.0 the standalone chart runs.
    _nv("gpucluster-dra-driver", "draDriver", "nvidia/dra-driver-nvidia-gpu", "v0.5.0", runs=manages_dra),
    # NFD subchart 0.19.0 (nfd.enabled): one image for master, worker and gc, tag its appVersion
    # (deployments/gpu-operator/charts/node-feature-discovery/{values,Chart}.yaml at v26.7.0).
    Entry("gpu-operator", "node-feature-discovery",
          ImageRef("registry.k8s.io", "nfd/node-feature-discovery", "v0.19.0",
                   "NVIDIA/gpu-operator v26.7.0 (10ee5b3) deployments/gpu-operator/charts/"
                   "node-feature-discovery/values.yaml, Chart.yaml appVersion v0.19.0"),
          keys=("node-feature-discovery.image.repository", "node-feature-discovery.image.tag"),
          mirror=(("node-feature-discovery.image.repository", "nfd/node-feature-discovery"),)),
)


# Every image-bearing component of the chart's values (deployments/gpu-operator/values.yaml at
# v26.7.0: the `image:` keys at L60, 74, 153, 201, 232, 244, 291, 303, 362, 373, 436, 447, 457, 467,
# 475, 489, 502, 510, 530, 543, 556, 583). The chart renders each one's fields into its custom
# resource whether the component is on or not (templates/clusterpolicy.yaml, gpucluster.yaml), so
# under a mirror each is either an entry of IMAGES (repository rewritten) or UNPUBLISHED (blanked).
CHART_IMAGE_KEYS = (
    "operator", "validator", "driver", "driver.manager", "toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd",
    "migManager", "nodeStatusExporter", "gds", "gdrcopy", "vgpuManager", "vgpuManager.driverManager",
    "vgpuDeviceManager", "vfioManager", "vfioManager.driverManager", "sandboxDevicePlugin", "kataSandboxDevicePlugin",
    "ccManager", "draDriver",
)
# vgpuManager: repository "" and version "" at the chart's defaults (values.yaml L464-468), so the
# ClusterPolicy gets a bare `image: vgpu-manager`, a name the runtime would look up on Docker Hub.
# No registry publishes it: the vGPU manager image is built by the customer from NVIDIA's vGPU
# driver (GPU Operator docs, "Using NVIDIA vGPU": build and push the vGPU Manager image). Under a
# mirror its `image` is blanked, and the template then writes none (`if .Values.vgpuManager.image`);
# a stack that runs vGPU names its own image in `values`, which merge over this.
UNPUBLISHED_IMAGES = ("vgpuManager",)


def _mirror_unpublished(_settings: Settings, _mirror: str) -> dict[str, Any]:
    return {key: {"image": ""} for key in UNPUBLISHED_IMAGES}


# The DRA driver release the GPUCluster runs (values draDriver.version at v26.7.0, L582-584): the
# one its feature gates are checked against (components/addons/dra_driver.py gate_problems).
GPU_CLUSTER_DRA_DRIVER = next(e for e in IMAGES if e.name == "gpucluster-dra-driver").image.tag.removeprefix("v")


ADDON = Addon(
    name="gpu-operator",
    settings_key="gpu_operator",
    description="NVIDIA driver (or host driver), container toolkit, GFD, DCGM exporter, MIG manager",
    namespace=NAMESPACE,
    platform_defaults={"aws": "on", "existing": "on", "kind": "off", "local": "off"},
    pod_security="privileged",
    values=values,
    chart_pin="gpu-operator",
    images=IMAGES,
    mirror_extra=_mirror_unpublished,
    provides=_provides,
    after_crds_of=("monitoring-crds",),  # its DCGM ServiceMonitor (values: serviceMonitor.enabled)
    conflicts=("fake-gpu-operator",),
    check=_check,
    readiness="operator",
    # NVIDIA asks for it with operator.upgradeCRD. pulumi-kubernetes passes it to Helm on install
    # only (provider/pkg/provider/helm_release.go, helmCreate; helmUpdate does not set it), and
    # it is moot on upgrades anyway: with an API server that does field validation (1.27+)
    # Helm's client-side OpenAPI check is skipped (k8s.io/kubectl pkg/validation/schema.go).
    disable_openapi_validation=True,
    # Driver + toolkit rollout on a fresh node takes 5-10 min; NVIDIA suggests 15-20.
    timeout_seconds=20 * 60,
)
