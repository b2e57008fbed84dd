"""The image catalog (pure): which container images every pinned chart runs, and how to point each
at a registry mirror.

One table serves two offline mechanisms: node images preload `preload_images` into containerd,
and with a private mirror `mirror_values` rewrites each chart's image values to
`<mirror>/<upstream registry host>/<repository>:<tag>` (the path layout of an ECR pull-through
cache and of k8s-snap's containerd hosts.toml mirrors), so no rendered object names a public
registry. Every entry names the upstream file it was read from at the pin (`source`); an entry
whose upstream could not be read at the pin says so (`verified=False`, `note`).

The catalog describes the PINNED chart versions (components/pins.py CHARTS): a stack that
overrides an add-on's version gets the pin's list (`catalog_version_mismatches` names them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .. import pins
from ..settings.model import Settings

# Registry hosts a pod must not pull from with the mirror on (the offline policy refuses them).
# Docker Hub answers under three names; a reference without a host means Docker Hub.
PUBLIC_HOSTS: frozenset[str] = frozenset({
    "nvcr.io", "ghcr.io", "registry.k8s.io", "quay.io", "docker.io", "public.ecr.aws",
    "registry-1.docker.io", "index.docker.io", "k8s.gcr.io", "gcr.io",
})
ARCHITECTURES = ("amd64", "arm64")  # components/images/settings.py Arch
# GPU nodes run Canonical's Ubuntu 24.04 (components/aws/ami.py); the GPU Operator appends the
# node's OS tag (NFD os_release ID + VERSION_ID) to driver image tags.
NODE_OS_TAG = "ubuntu24.04"


@dataclass(frozen=True)
class ImageRef:
    registry: str  # "nvcr.io", "ghcr.io", "registry.k8s.io", "quay.io", "docker.io", "public.ecr.aws"
    repository: str  # "nvidia/gpu-operator"
    tag: str
    source: str  # the upstream file (repo, path, tag/commit) the reference was read from
    digest: str = ""  # "sha256:..." where the pin table records one
    verified: bool = True  # False: not read from upstream at the pin (see note)
    note: str = ""

    def ref(self) -> str:
        """`nvcr.io/nvidia/gpu-operator:v26.7.0`; docker.io stays explicit."""
        return f"{self.registry}/{self.repository}:{self.tag}"

    def mirrored(self, mirror: str) -> str:
        return f"{mirror.rstrip('/')}/{self.registry}/{self.repository}:{self.tag}"

    def pull_ref(self) -> str:
        """The reference with its digest where one is pinned (what a node should pull)."""
        return f"{self.ref()}@{self.digest}" if self.digest else self.ref()


def _always(_s: Settings) -> bool:
    return True


def _never(_s: Settings) -> bool:
    return False


@dataclass(frozen=True)
class Entry:
    """One image of one chart: the values keys that build it, the ones `mirror_values` rewrites
    (`mirror`: path -> suffix after `<mirror>/<registry>`), and whether it runs for a stack.
    `runs=_never`: rendered into an object (a ClusterPolicy field, an operator flag, a Helm test)
    but no pod runs it at our values: mirrored, never preloaded."""

    chart: str
    name: str
    image: ImageRef
    keys: tuple[str, ...]
    mirror: tuple[tuple[str, str], ...]
    runs: Callable[[Settings], bool] = _always
    # The GPU Operator's precompiled driver: the operator appends `-<node kernel>-<os tag>`, so
    # the full tag exists only where the node's kernel is known (the image program).
    kernel_tagged: bool = False

    @property
    def can_run(self) -> bool:
        return self.runs is not _never


# --- NVIDIA GPU Operator v26.7.0 -----------------------------------------------------------
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


def _nv(name: str, key: str, repository: str, tag: str, runs: Callable[[Settings], bool] = _always,
        kernel_tagged: bool = False, note: str = "") -> Entry:
    namespace = repository.rsplit("/", 1)[0]  # values `repository`; the last part is `image`
    return Entry(
        "gpu-operator", name, ImageRef("nvcr.io", repository, tag, _GPU_OP, note=note),
        keys=(f"{key}.repository", f"{key}.image", f"{key}.version"),
        mirror=((f"{key}.repository", namespace),), runs=runs, kernel_tagged=kernel_tagged,
    )


def _driver_compiled(s: Settings) -> bool:
    return s.gpu_stack.driver == "operator"


def _driver_precompiled(s: Settings) -> bool:
    return s.gpu_stack.driver == "precompiled"


def _driver_on(s: Settings) -> bool:
    # components/addons/gpu_operator.py values: driver.enabled = driver mode is not `host`.
    return s.gpu_stack.driver != "host"


def _toolkit_on(s: Settings) -> bool:
    # gpu_operator.toolkit_values: toolkit.enabled = toolkit mode is not `host` (the image has it).
    return s.gpu_stack.toolkit != "host"


def _device_plugin_on(s: Settings) -> bool:
    # gpu_operator.values devicePlugin.enabled = allocation is not `dra` (one advertiser per node).
    return s.gpu_stack.allocation != "dra"


def _mig_manager_on(s: Settings) -> bool:
    return s.gpu_stack.mig_strategy != "none"


GPU_OPERATOR: tuple[Entry, ...] = (
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
    _nv("container-toolkit", "toolkit", "nvidia/k8s/container-toolkit", "v1.20.0", runs=_toolkit_on),
    # The device plugin, and the MPS control daemon (state-mps-control-daemon) with the same image.
    _nv("device-plugin", "devicePlugin", "nvidia/k8s-device-plugin", "v0.20.0", runs=_device_plugin_on),
    _nv("dcgm-exporter", "dcgmExporter", "nvidia/k8s/dcgm-exporter", "4.6.0-4.8.3-distroless"),
    # GPU feature discovery ships in the device plugin's image: it runs in DRA mode too.
    _nv("gfd", "gfd", "nvidia/k8s-device-plugin", "v0.20.0"),
    _nv("mig-manager", "migManager", "nvidia/cloud-native/k8s-mig-manager", "v0.15.0", runs=_mig_manager_on),
    # Off at the chart's defaults and ours (dcgm.enabled, nodeStatusExporter, gds, gdrcopy,
    # sandbox workloads, GPUCluster): rendered, never run.
    _nv("dcgm", "dcgm", "nvidia/cloud-native/dcgm", "4.6.0-1-ubuntu24.04", runs=_never),
    _nv("node-status-exporter", "nodeStatusExporter", "nvidia/gpu-operator", _GPU_OP_TAG, runs=_never),
    _nv("gds", "gds", "nvidia/cloud-native/nvidia-fs", "2.29.4", runs=_never),
    _nv("gdrcopy", "gdrcopy", "nvidia/cloud-native/gdrdrv", "v2.6", runs=_never),
    _nv("vgpu-driver-manager", "vgpuManager.driverManager", "nvidia/cloud-native/k8s-driver-manager",
        "v0.12.0", runs=_never),
    _nv("vgpu-device-manager", "vgpuDeviceManager", "nvidia/cloud-native/vgpu-device-manager", "v0.5.0",
        runs=_never),
    _nv("vfio-manager", "vfioManager", "nvidia/cloud-native/k8s-driver-manager", "v0.12.0", runs=_never),
    _nv("vfio-driver-manager", "vfioManager.driverManager", "nvidia/cloud-native/k8s-driver-manager",
        "v0.12.0", runs=_never),
    _nv("sandbox-device-plugin", "sandboxDevicePlugin", "nvidia/kubevirt-gpu-device-plugin", "v1.6.0",
        runs=_never),
    _nv("kata-sandbox-device-plugin", "kataSandboxDevicePlugin", "nvidia/cloud-native/nvidia-sandbox-device-plugin",
        "v0.0.5", runs=_never),
    _nv("cc-manager", "ccManager", "nvidia/cloud-native/k8s-cc-manager", "v0.4.3", runs=_never),
    _nv("gpucluster-dra-driver", "draDriver", "nvidia/dra-driver-nvidia-gpu", "v0.5.0", runs=_never),
    # NFD subchart 0.19.0 (nfd.enabled): one image for master, worker and gc, tag its appVersion
    # (deployments/gpu-operator/charts/node-feature-discovery/{values,Chart}.yaml at v26.7.0).
    Entry("gpu-operator", "node-feature-discovery",
          ImageRef("registry.k8s.io", "nfd/node-feature-discovery", "v0.19.0",
                   "NVIDIA/gpu-operator v26.7.0 (10ee5b3) deployments/gpu-operator/charts/"
                   "node-feature-discovery/values.yaml, Chart.yaml appVersion v0.19.0"),
          keys=("node-feature-discovery.image.repository", "node-feature-discovery.image.tag"),
          mirror=(("node-feature-discovery.image.repository", "nfd/node-feature-discovery"),)),
)


# --- KAI Scheduler v0.17.0 -------------------------------------------------------------------
# kai-scheduler/KAI-Scheduler tag v0.17.0 (commit f218c69). Every image is
# `<global.registry>/<component>.image.name:<tag>` (deployments/kai-scheduler/templates/
# _helpers.tpl, services/operator.yaml, hooks/*; the operator builds its operands the same way from
# MS_REPOSITORY/MS_TAG, pkg/apis/kai/v1/common/image.go Url). The released chart's global.registry
# is ghcr.io/kai-scheduler/kai-scheduler (.github/workflows/push-artifacts.yaml seds it in) and its
# appVersion the tag (`helm package --app-version $PACKAGE_VERSION`, = GITHUB_REF_NAME).
_KAI = "kai-scheduler/KAI-Scheduler v0.17.0 (f218c69) deployments/kai-scheduler/values.yaml"
_KAI_TAG = pins.CHARTS["kai-scheduler"].version
_KAI_REPO = "kai-scheduler/kai-scheduler"


def _kai(name: str, key: str, image: str, runs: Callable[[Settings], bool] = _always) -> Entry:
    return Entry("kai-scheduler", name, ImageRef("ghcr.io", f"{_KAI_REPO}/{image}", _KAI_TAG, _KAI),
                 keys=("global.registry", f"{key}.name", f"{key}.tag", "global.tag"),
                 mirror=(("global.registry", _KAI_REPO),), runs=runs)


KAI_SCHEDULER: tuple[Entry, ...] = (
    _kai("operator", "operator.image", "operator"),
    _kai("podgrouper", "podgrouper.image", "podgrouper"),
    _kai("podgroupcontroller", "podgroupcontroller.image", "podgroupcontroller"),
    _kai("binder", "binder.image", "binder"),
    # The binder's GPU reservation pods (binder.resourceReservationImage; name `resourcereservation`
    # as the Makefile SERVICE_NAMES builds it).
    _kai("resource-reservation", "binder.resourceReservationImage", "resourcereservation"),
    _kai("scheduler", "scheduler.image", "scheduler"),
    _kai("queuecontroller", "queuecontroller.image", "queuecontroller"),
    _kai("admission", "admission.image", "admission"),
    # The CRD upgrade pre-hook, the topology-migration pre-hook and the post-delete cleanup
    # (crdupgrader, topologyMigration, postCleanup; kaiConfigDeployer is off in our values).
    _kai("crd-upgrader", "crdupgrader.image", "crd-upgrader"),
    # Enabled `auto` (pkg/apis/kai/v1/numa_placement_exporter: nil = auto) on nodes NFD labels
    # feature.node.kubernetes.io/memory-numa=true: multi-socket GPU instances.
    _kai("numa-placement-exporter", "numaPlacementExporter.image", "numa-placement-exporter"),
    # Only with global.clusterAutoscaling (false): named in the kai-config Config object.
    _kai("nodescaleadjuster", "nodescaleadjuster.image", "nodescaleadjuster", runs=_never),
    _kai("scalingpod", "nodescaleadjuster.scalingPodImage", "scalingpod", runs=_never),
)


# --- DRA driver 0.5.0 ------------------------------------------------------------------------
# kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu: one image for the
# controller, webhook and kubelet plugin, `<image.repository>:<image.tag | v+appVersion>`
# (templates/_helpers.tpl fullimage). Read at main 95932046 (chart 0.5.0-dev); the 0.5.0 tag is not
# in the mirror, so the v0.5.0 tag is the template's rule applied to appVersion 0.5.0.
DRA_DRIVER: tuple[Entry, ...] = (
    Entry("dra-driver-nvidia-gpu", "dra-driver",
          ImageRef("registry.k8s.io", "dra-driver-nvidia/dra-driver-nvidia-gpu", "v0.5.0",
                   "kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (0.5.0-dev) "
                   "deployments/helm/dra-driver-nvidia-gpu/values.yaml, templates/_helpers.tpl",
                   verified=False,
                   note="chart 0.5.0 not in the mirror: tag is v<appVersion> applied to 0.5.0"),
          keys=("image.repository", "image.tag"),
          mirror=(("image.repository", "dra-driver-nvidia/dra-driver-nvidia-gpu"),)),
)


# --- run-ai/fake-gpu-operator 0.2.0 (kind only) ----------------------------------------------
# run-ai/fake-gpu-operator tag v0.2.0 (commit 3a3f644) deploy/fake-gpu-operator/values.yaml and
# templates: `<repository>:<tag | .Chart.AppVersion>`; CI packages chart and app at the release
# version (.github/workflows/ci.yml `helm package --version X --app-version X`), the pin's 0.2.0.
_FAKE = "run-ai/fake-gpu-operator v0.2.0 (3a3f644) deploy/fake-gpu-operator/values.yaml"
_FAKE_TAG = pins.CHARTS["fake-gpu-operator"].version


def _fake(name: str, key: str, image: str, runs: Callable[[Settings], bool] = _always) -> Entry:
    repo = f"run-ai/fake-gpu-operator/{image}"
    return Entry("fake-gpu-operator", name, ImageRef("ghcr.io", repo, _FAKE_TAG, _FAKE),
                 keys=(f"{key}.image.repository", f"{key}.image.tag"),
                 mirror=((f"{key}.image.repository", repo),), runs=runs)


def _fake_dra(s: Settings) -> bool:
    # components/addons/fake_gpu_operator.py: draPlugin with allocation dra, else devicePlugin.
    return s.gpu_stack.allocation == "dra"


FAKE_GPU_OPERATOR: tuple[Entry, ...] = (
    _fake("device-plugin", "devicePlugin", "device-plugin", runs=lambda s: not _fake_dra(s)),
    _fake("dra-plugin", "draPlugin", "dra-plugin-gpu", runs=_fake_dra),
    _fake("status-updater", "statusUpdater", "status-updater"),
    _fake("topology-server", "topologyServer", "topology-server"),
    _fake("status-exporter", "statusExporter", "status-exporter"),
    _fake("mig-faker", "migFaker", "mig-faker"),
    # The status exporter's hostpath-init container (templates/status-exporter/daemonset.yaml).
    Entry("fake-gpu-operator", "ubuntu", ImageRef("docker.io", "library/ubuntu", "24.04", _FAKE),
          keys=("ubuntu.image.repository", "ubuntu.image.tag"),
          mirror=(("ubuntu.image.repository", "library/ubuntu"),)),
    # templates/gpu-operator/deployment.yml (when gpuOperator.enabled is false, the default)
    # hard-codes `ubuntu:22.04`: no value redirects it, so a mirror cannot serve it.
    Entry("fake-gpu-operator", "gpu-operator-standin",
          ImageRef("docker.io", "library/ubuntu", "22.04",
                   "run-ai/fake-gpu-operator v0.2.0 (3a3f644) deploy/fake-gpu-operator/templates/"
                   "gpu-operator/deployment.yml", note="hard-coded in the template: not mirrorable"),
          keys=(), mirror=()),
)


# --- kube-prometheus-stack 88.5.3 ------------------------------------------------------------
# prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3: charts/kube-prometheus-stack/
# values.yaml; images are `<global.imageRegistry | registry>/<repository>:<tag | appVersion>`
# (templates/prometheus-operator/deployment.yaml, prometheus/prometheus.yaml,
# alertmanager/alertmanager.yaml, admission-webhooks/job-patch/*); appVersion v0.93.1 (Chart.yaml).
# Per-image `registry` rather than global.imageRegistry: each image keeps its own upstream host
# under the mirror.
_KPS = "prometheus-community/helm-charts kube-prometheus-stack-88.5.3 charts/kube-prometheus-stack/values.yaml"
_KPS_OPERATOR_TAG = "v0.93.1"


def _reg(chart: str, name: str, key: str, registry: str, repository: str, tag: str, source: str,
         runs: Callable[[Settings], bool] = _always) -> Entry:
    return Entry(chart, name, ImageRef(registry, repository, tag, source),
                 keys=(f"{key}.registry", f"{key}.repository", f"{key}.tag"),
                 mirror=((f"{key}.registry", ""),), runs=runs)


_KSM = "prometheus-community/helm-charts kube-state-metrics-8.4.0 charts/kube-state-metrics/values.yaml"
_NODE_EXPORTER = ("prometheus-community/helm-charts prometheus-node-exporter-4.56.1 "
                  "charts/prometheus-node-exporter/values.yaml, templates/_helpers.tpl")
_GRAFANA = "grafana-community/helm-charts grafana-12.11.1 charts/grafana/values.yaml, templates/_pod.tpl"

KUBE_PROMETHEUS_STACK: tuple[Entry, ...] = (
    _reg("kube-prometheus-stack", "prometheus-operator", "prometheusOperator.image", "quay.io",
         "prometheus-operator/prometheus-operator", _KPS_OPERATOR_TAG, _KPS),
    # Passed to the operator as --prometheus-config-reloader; it runs beside Prometheus and Alertmanager.
    _reg("kube-prometheus-stack", "config-reloader", "prometheusOperator.prometheusConfigReloader.image",
         "quay.io", "prometheus-operator/prometheus-config-reloader", _KPS_OPERATOR_TAG, _KPS),
    # admissionWebhooks.patch.enabled: the certificate create/patch hook Jobs.
    _reg("kube-prometheus-stack", "admission-webhook-patch", "prometheusOperator.admissionWebhooks.patch.image",
         "ghcr.io", "jkroepke/kube-webhook-certgen", "1.8.7", _KPS),
    _reg("kube-prometheus-stack", "prometheus", "prometheus.prometheusSpec.image", "quay.io",
         "prometheus/prometheus", "v3.14.0-distroless", _KPS),
    _reg("kube-prometheus-stack", "alertmanager", "alertmanager.alertmanagerSpec.image", "quay.io",
         "prometheus/alertmanager", "v0.34.0", _KPS),
    # Only named in the operator's --thanos-default-base-image flag (no Thanos sidecar or ruler here).
    _reg("kube-prometheus-stack", "thanos", "prometheusOperator.thanosImage", "quay.io", "thanos/thanos",
         "v0.42.4", _KPS, runs=_never),
    # Subchart kube-state-metrics 8.4.0: tag v<appVersion 2.20.0>.
    _reg("kube-prometheus-stack", "kube-state-metrics", "kube-state-metrics.image", "registry.k8s.io",
         "kube-state-metrics/kube-state-metrics", "v2.20.0", _KSM),
    # Subchart prometheus-node-exporter 4.56.1: tag v<appVersion 1.12.1> + `-distroless`, which
    # kube-prometheus-stack turns on (prometheus-node-exporter.image.distroless: true).
    _reg("kube-prometheus-stack", "node-exporter", "prometheus-node-exporter.image", "quay.io",
         "prometheus/node-exporter", "v1.12.1-distroless", _NODE_EXPORTER),
    # Subchart grafana 12.11.1: tag appVersion 13.2.0; the dashboards/datasources sidecars
    # (kube-prometheus-stack turns both on) share sidecar.image.
    _reg("kube-prometheus-stack", "grafana", "grafana.image", "docker.io", "grafana/grafana", "13.2.0", _GRAFANA),
    _reg("kube-prometheus-stack", "grafana-sidecar", "grafana.sidecar.image", "quay.io", "kiwigrid/k8s-sidecar",
         "2.10.1", _GRAFANA),
    # The chart's `helm test` pod (testFramework.enabled): rendered as a test hook, not installed.
    _reg("kube-prometheus-stack", "grafana-test", "grafana.testFramework.image", "docker.io", "bats/bats",
         "1.14.0", _GRAFANA, runs=_never),
)


# --- aws-cloud-controller-manager 0.0.10 -----------------------------------------------------
_CCM = ("kubernetes/cloud-provider-aws e4e42f3 (chart version 0.0.10, appVersion v1.34.0) "
        "charts/aws-cloud-controller-manager/values.yaml, templates/daemonset.yaml")
AWS_CCM: tuple[Entry, ...] = (
    Entry("aws-cloud-controller-manager", "cloud-controller-manager",
          ImageRef("registry.k8s.io", "provider-aws/cloud-controller-manager", "v1.34.0", _CCM),
          keys=("image.repository", "image.tag"),
          mirror=(("image.repository", "provider-aws/cloud-controller-manager"),)),
)


# --- velero 11.1.1 ---------------------------------------------------------------------------
# vmware-tanzu/helm-charts tag velero-11.1.1 (commit 5b4838c): the server Deployment and the node
# agent run `<image.repository>:<image.tag>` (templates/deployment.yaml, node-agent-daemonset.yaml);
# `velero/velero` has no host: Docker Hub. The kubectl hook images are off at our values
# (upgradeCRDs false, cleanUpCRDs false, no namespace.labels).
_VELERO = "vmware-tanzu/helm-charts velero-11.1.1 (5b4838c) charts/velero/values.yaml"
_PLUGIN = pins.IMAGES["velero-plugin-aws"]


def _split(repository: str) -> tuple[str, str]:
    host, _, rest = repository.partition("/")
    return host, rest


VELERO: tuple[Entry, ...] = (
    Entry("velero", "velero", ImageRef("docker.io", "velero/velero", "v1.17.0", _VELERO),
          keys=("image.repository", "image.tag"), mirror=(("image.repository", "velero/velero"),)),
    # Our init container (components/addons/velero_values.py _aws_plugin): a list entry, rewritten
    # by `mirror_values` as the whole initContainers list.
    Entry("velero", "velero-plugin-for-aws",
          ImageRef(*_split(_PLUGIN.repository), _PLUGIN.tag, "components/pins.py IMAGES velero-plugin-aws",
                   digest=_PLUGIN.digest),
          keys=("initContainers[0].image",), mirror=()),
)


# --- aws-efa-k8s-device-plugin v0.5.30 -------------------------------------------------------
# aws/eks-charts 5239609 stable/aws-efa-k8s-device-plugin: `<image.repository>:<image.tag |
# appVersion>` (templates/daemonset.yaml), tag v0.5.20; the repository is ours (AWS's public copy,
# components/addons/efa_device_plugin.py PUBLIC_IMAGE_REPOSITORY), not the chart's private ECR.
_EFA_REGISTRY, _EFA_REPO = _split("public.ecr.aws/eks/aws-efa-k8s-device-plugin")
EFA_DEVICE_PLUGIN: tuple[Entry, ...] = (
    Entry("aws-efa-k8s-device-plugin", "efa-device-plugin",
          ImageRef(_EFA_REGISTRY, _EFA_REPO, "v0.5.20",
                   "aws/eks-charts 5239609 stable/aws-efa-k8s-device-plugin/values.yaml (chart v0.5.30); "
                   "repository: components/addons/efa_device_plugin.py"),
          keys=("image.repository", "image.tag"), mirror=(("image.repository", _EFA_REPO),)),
)


CATALOG: tuple[Entry, ...] = (
    *GPU_OPERATOR, *KAI_SCHEDULER, *DRA_DRIVER, *FAKE_GPU_OPERATOR, *KUBE_PROMETHEUS_STACK,
    *AWS_CCM, *VELERO, *EFA_DEVICE_PLUGIN,
)
# Charts that never run on aws (the kind-only simulator): not in node images.
NOT_ON_AWS = frozenset({"fake-gpu-operator"})


def entries(chart: str) -> tuple[Entry, ...]:
    if chart not in pins.CHARTS:
        raise KeyError(f"unknown chart {chart!r}: not in components/pins.py CHARTS")
    return tuple(e for e in CATALOG if e.chart == chart)


def _unique_sorted(refs: Iterator[ImageRef] | tuple[ImageRef, ...] | list[ImageRef]) -> tuple[ImageRef, ...]:
    seen: dict[str, ImageRef] = {}
    for r in refs:
        seen.setdefault(r.pull_ref(), r)
    return tuple(seen[k] for k in sorted(seen))


def chart_images(chart: str, settings: Settings) -> tuple[ImageRef, ...]:
    """What this chart's pods run for these settings (the precompiled driver, whose tag names the
    node's kernel, is left to `precompiled_driver_image`)."""
    return _unique_sorted([e.image for e in entries(chart) if e.runs(settings) and not e.kernel_tagged])


def precompiled_driver_image(kernel: str, os_tag: str = NODE_OS_TAG) -> ImageRef:
    """The precompiled driver a node with `kernel` (uname -r) pulls: `<branch>-<kernel>-<os tag>`."""
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-[a-z0-9]+", kernel):
        raise ValueError(f"kernel {kernel!r} is not a kernel release like 6.8.0-1024-aws")
    base = next(e.image for e in GPU_OPERATOR if e.kernel_tagged)
    return ImageRef(base.registry, base.repository, f"{base.tag}-{kernel}-{os_tag}", base.source,
                    note="NVIDIA publishes it only for the newest kernels of each OS (components/pins.py)")


def _addon_charts(settings: Settings) -> list[str]:
    from .catalog import ADDONS  # the add-on modules import settings, not us
    from .graph import cluster_capabilities, select

    return [a.chart_pin for a in select(ADDONS, settings, cluster_capabilities(settings)) if a.chart_pin]


def catalog_version_mismatches(settings: Settings) -> tuple[str, ...]:
    """Add-ons this stack installs at a version other than the pin: the catalog lists the pin's images."""
    from .catalog import ADDONS

    charts = set(_addon_charts(settings))
    return tuple(sorted(a.name for a in ADDONS if a.chart_pin in charts
                        and a.version(settings) != pins.CHARTS[a.chart_pin].version))


def parse_ref(reference: str, source: str) -> ImageRef:
    """`[host/]repository:tag[@sha256:...]` as an ImageRef (no host: Docker Hub, `library/` for one part)."""
    m = _REF.fullmatch(reference)
    if m is None or not m.group("tag"):
        raise ValueError(f"{reference!r} is not an image reference with a tag")
    host, path = m.group("host"), m.group("path")
    if host is None:
        host, path = "docker.io", path if "/" in path else f"library/{path}"
    return ImageRef(host, path, m.group("tag"), source, digest=m.group("digest") or "")


def _smoke_images(settings: Settings) -> list[ImageRef]:
    smoke = settings.smoke_test
    if not smoke.enabled:
        return []
    pin = pins.IMAGES["smoke-test"]
    out = [parse_ref(smoke.image, "settings.smokeTest.image") if smoke.image
           else parse_ref(pin.ref, "components/pins.py IMAGES smoke-test")]
    if smoke.all_reduce.enabled:
        out.append(parse_ref(smoke.all_reduce.image, "settings.smokeTest.allReduce.image")
                   if smoke.all_reduce.image
                   else parse_ref(pins.IMAGES["nccl-tests"].ref, "components/pins.py IMAGES nccl-tests"))
    return out


def stack_images(settings: Settings) -> tuple[ImageRef, ...]:
    """Every image the stack's enabled add-ons run, plus the smoke test's: sorted, unique."""
    refs = [r for chart in _addon_charts(settings) for r in chart_images(chart, settings)]
    return _unique_sorted(refs + _smoke_images(settings))


def preload_images(architecture: str, kernel: str | None = None) -> tuple[ImageRef, ...]:
    """What a node image carries: every image any aws stack can run from every chart pin, and the
    smoke-test image. Not kind-node or the fake GPU operator (never on aws), not nccl-tests (opt-in,
    several GB). With `kernel`, the precompiled driver for it too. The same list for both
    architectures: the image program exports each reference's `architecture` variant."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture {architecture!r}: expected one of {', '.join(ARCHITECTURES)}")
    refs = [e.image for e in CATALOG if e.chart not in NOT_ON_AWS and e.can_run and not e.kernel_tagged]
    smoke = pins.IMAGES["smoke-test"]
    refs.append(parse_ref(smoke.ref, "components/pins.py IMAGES smoke-test"))
    if kernel is not None:
        refs.append(precompiled_driver_image(kernel))
    return _unique_sorted(refs)


_MIRROR = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*/?$")


def _set(out: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = out
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value


def mirror_values(chart: str, mirror: str, settings: Settings) -> dict[str, Any]:
    """Values that point every image of `chart` at `mirror` (`<mirror>/<host>/<repository>`),
    for the caller to merge over the add-on's values and under the stack's own `values:`."""
    if not _MIRROR.match(mirror):
        raise ValueError(f"mirror {mirror!r}: expected a registry host with an optional path, "
                         "no scheme (e.g. 123456789012.dkr.ecr.eu-west-1.amazonaws.com)")
    m = mirror.rstrip("/")
    out: dict[str, Any] = {}
    for e in entries(chart):
        for path, rest in e.mirror:
            _set(out, path, f"{m}/{e.image.registry}" + (f"/{rest}" if rest else ""))
    if chart == "velero":
        from .velero_values import velero_values

        # Lists replace on merge: the init containers again, each image under the mirror.
        inits = velero_values(settings).get("initContainers")
        if inits:
            out["initContainers"] = [{**c, "image": _mirror_ref(c["image"], m)} for c in inits]
    return out


def _mirror_ref(reference: str, mirror: str) -> str:
    r = parse_ref(reference, "")
    return r.mirrored(mirror) + (f"@{r.digest}" if r.digest else "")


# An image reference: optional host (has a dot or port, or is localhost), lower-case path, then a
# tag and/or a digest (distribution/reference grammar, simplified).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REF = re.compile(
    rf"(?:(?P<host>(?:[a-zA-Z0-9-]+\.[a-zA-Z0-9.-]+|localhost)(?::[0-9]+)?)/)?"
    rf"(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)


def _public(value: str) -> bool:
    if value in PUBLIC_HOSTS:  # a bare registry value (kube-prometheus-stack `registry: quay.io`)
        return True
    m = _REF.fullmatch(value)
    if m is None:
        return False
    host = m.group("host")
    if host is not None:
        return host in PUBLIC_HOSTS
    # No host means Docker Hub, but only a tag or digest makes a word or path an image reference;
    # a first component of digits and dots is an address (10.0.0.1:6443), not a repository.
    first = m.group("path").split("/")[0]
    return bool(m.group("tag") or m.group("digest")) and not re.fullmatch(r"[0-9.]+", first)


def public_image_refs(obj: Any) -> list[tuple[str, str]]:
    """(path, value) of every string in `obj` that names an image, or a registry, on a public host."""
    out: list[tuple[str, str]] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, str):
            if _public(node):
                out.append((path or "$", node))
        elif isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(obj, "")
    return out
