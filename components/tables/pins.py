"""The one pin table: every version the project chooses (charts, images, snap tracks and revisions,
the kind node image, node-image software, tools) lives here.

The other versions in the code are facts about what a pinned chart deploys at its pin: the image
tags in each add-on module's `IMAGES` (components/addons/*.py), each citing the chart file it was
read from; they change when the chart pin changes, never on their own. `tests/unit/test_pins.py`
rejects floating versions and duplicates. Per-stack overrides (`gpuStack.addons.<name>.version`)
are validated against the same rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ChartPin:
    """A Helm chart at an exact version. `repo` is an https Helm repo or an `oci://` prefix."""

    name: str
    repo: str
    version: str

    @property
    def is_oci(self) -> bool:
        return self.repo.startswith("oci://")


@dataclass(frozen=True)
class ImagePin:
    """A container image at an exact tag, with its digest where known (preferred for pulls)."""

    repository: str
    tag: str
    digest: str = ""

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}@{self.digest}" if self.digest else f"{self.repository}:{self.tag}"


@dataclass(frozen=True)
class SnapTrack:
    """A Canonical Kubernetes snap track and facts the rest of the project derives behaviour from."""

    track: str
    kubernetes: str
    containerd_major: int
    dra_ga: bool  # resource.k8s.io/v1 served and DRA on by default
    cdi: bool  # containerd can do CDI (the GPU operator's cdi.enabled)

    @property
    def channel(self) -> str:
        return f"{self.track}/stable"

    @property
    def minor(self) -> int:
        return int(self.kubernetes.split(".")[1])

    @property
    def dra_apis(self) -> tuple[str, ...]:
        return dra_apis(self.minor)


# The resource.k8s.io versions the platforms make Kubernetes 1.<minor> serve for DRA, newest first:
# v1 from 1.34 (GA, on by default); before that the beta versions the release has (v1beta1 from 1.32,
# v1beta2 from 1.33), which are off by default and switched on with runtime-config (EC2 user-data,
# the kind config). KEP-4381 graduation; kubernetes pkg/apis/resource/{v1beta1,v1beta2,v1}.
DRA_BETA_APIS = {32: ("resource.k8s.io/v1beta1",), 33: ("resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")}


def dra_apis(minor: int) -> tuple[str, ...]:
    if minor >= 34:
        return ("resource.k8s.io/v1",)
    return DRA_BETA_APIS.get(minor, ())


def newest_dra_api(minor: int, supported: tuple[str, ...]) -> str | None:
    """The newest version 1.<minor> serves that a consumer (a chart) supports; None: none."""
    return next((api for api in dra_apis(minor) if api in supported), None)


SNAP_TRACKS: dict[str, SnapTrack] = {
    t.track: t
    for t in (
        SnapTrack("1.32-classic", "v1.32.13", 1, dra_ga=False, cdi=False),
        SnapTrack("1.33-classic", "v1.33.13", 1, dra_ga=False, cdi=True),
        SnapTrack("1.34-classic", "v1.34.11", 1, dra_ga=True, cdi=True),
        SnapTrack("1.35-classic", "v1.35.7", 2, dra_ga=True, cdi=True),
        SnapTrack("1.36-classic", "v1.36.4", 2, dra_ga=True, cdi=True),
    )
}
DEFAULT_TRACK = "1.34-classic"
# The k8s snap's revisions per architecture for a version, as the store lists them: a revision is
# per architecture, so an amd64 number in an arm64 line downloads nothing (`snap download` asks
# the store for that revision of the build host's architecture: snapd 2.77
# store/tooling/tooling.go NewToolingStore, UBUNTU_STORE_ARCH). Source: canonical/k8s-operator#947,
# `snapcraft status k8s` 2026-06-05: 1.34-classic stable v1.34.4 amd64 5325, arm64 5328. A version
# absent here is not judged; a revision listed here for another version is refused (settings and
# image lines alike: components/settings/rules/cluster.py, components/images/settings.py).
KNOWN_SNAP_REVISIONS: dict[tuple[str, str], int] = {("v1.34.4", "amd64"): 5325, ("v1.34.4", "arm64"): 5328}

CHARTS: dict[str, ChartPin] = {
    "gpu-operator": ChartPin("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "v26.7.0"),
    # 0.5.0 (2026-08-18, kubernetes-sigs/dra-driver-nvidia-gpu#1365; chart promoted to registry.k8s.io
    # by kubernetes/k8s.io#9845): docs/compatibility.md "DRA driver 0.5.0", docs/adr/0032.
    "dra-driver-nvidia-gpu": ChartPin(
        "dra-driver-nvidia-gpu", "oci://registry.k8s.io/dra-driver-nvidia/charts", "0.5.0"
    ),
    "kai-scheduler": ChartPin("kai-scheduler", "oci://ghcr.io/kai-scheduler/kai-scheduler", "v0.17.0"),
    "fake-gpu-operator": ChartPin("fake-gpu-operator", "oci://ghcr.io/run-ai/fake-gpu-operator", "0.2.0"),
    "kube-prometheus-stack": ChartPin(
        # 88.5.3 (2026-08-21; prometheus-operator v0.93.1): 79.10.0 dated from 2025-12.
        "kube-prometheus-stack", "https://prometheus-community.github.io/helm-charts", "88.5.3"
    ),
    "aws-cloud-controller-manager": ChartPin(
        "aws-cloud-controller-manager", "https://kubernetes.github.io/cloud-provider-aws", "0.0.10"
    ),
    "velero": ChartPin("velero", "https://vmware-tanzu.github.io/helm-charts", "11.1.1"),
    # Chart v0.5.30 (eks-charts 5239609, 2026-08-03): its appVersion v0.5.20 is the image tag the
    # add-on runs (values image.tag), so this pin decides the image too.
    "aws-efa-k8s-device-plugin": ChartPin(
        "aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "v0.5.30"
    ),
    # The autoscaler of autoscaled pools (components/addons/karpenter.py, ADR 0049): chart and
    # controller 1.15.0, the release whose core (sigs.k8s.io/karpenter v1.15.0) and AWS provider
    # (v1.15.0) tools/mod/karpenter builds and runs in CI. v1.15.1+ pairs with a core the module
    # proxy refuses, so CI could not run it.
    "karpenter": ChartPin("karpenter", "oci://public.ecr.aws/karpenter", "1.15.0"),
    # The AI operator (components/addons/kuberay_operator.py, ADR 0050): chart and operator v1.5.2,
    # the release tools/mod/kuberay builds and CI runs. The chart is published per release tag
    # (ray-project/kuberay-helm, kuberay-operator-1.5.2); the Go proxy lists v1.5.0 as latest but
    # serves v1.5.2 when named.
    "kuberay-operator": ChartPin("kuberay-operator", "https://ray-project.github.io/kuberay-helm/", "1.5.2"),
    # Pod autoscaling on AI metrics (components/addons/keda.py, ADR 0051): chart and app 2.21.1, the
    # release tools/mod/keda builds and CI runs (the kedacore/charts release of each app version
    # carries the same number).
    "keda": ChartPin("keda", "https://kedacore.github.io/charts", "2.21.1"),
    # The inference gateway (components/addons/inference_gateway.py, ADR 0052): chart 41.3.0
    # (traefik/traefik-helm-chart a8a66d0, 2026-08-21, appVersion v3.7.11), run with the proxy at
    # TRAEFIK below, the release tools/mod/traefik builds and CI runs.
    "traefik": ChartPin("traefik", "https://traefik.github.io/charts", "41.3.0"),
}

# The inference gateway's proxy and Gateway API controller (one binary): v3.7.13, two patch
# releases past the chart's appVersion, because that is the newest the module proxy serves and so
# the one CI runs (tools/mod/traefik); the chart's values accept any v3.7 (image.tag).
TRAEFIK = "v3.7.13"
# The Gateway API CRDs the inference gateway installs: the standard channel at the version
# TRAEFIK's go.mod builds against (sigs.k8s.io/gateway-api v1.6.1), from its release assets.
GATEWAY_API = "v1.6.1"
GATEWAY_API_CRDS_URL = (f"https://github.com/kubernetes-sigs/gateway-api/releases/download/{GATEWAY_API}/"
                        "standard-install.yaml")

# The GPU Operator's `driver.version` with `gpuStack.driver: precompiled` (driver.usePrecompiled):
# a driver BRANCH, not a version. The operator pulls `<repository>/<image>:<version>-<node's
# kernel>-<os tag>` (NVIDIA/gpu-operator v26.7.0, controllers/object_controls.go resolveDriverTag;
# api/nvidia/v1alpha1/nvidiadriver_types.go: "NVIDIA Driver version (or just branch for precompiled
# drivers)"; gpu-operator/precompiled-drivers.rst in NVIDIA/cloud-native-docs: `--set
# driver.version=<driver-branch>`). 595 is the branch of the chart's own default driver.version,
# 595.91.07 (deployments/gpu-operator/values.yaml at v26.7.0), so compiled and precompiled nodes run
# one branch. Change it with CHARTS["gpu-operator"].
GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH = "595"
# The driver branch baked into GPU node images (`images/`, docs/adr/0020): the same branch, so
# host-driver pools run what the operator would have installed. Ubuntu ships it as signed modules
# (linux-modules-nvidia-595-server[-open]-<flavour>) and nvidia-utils-595-server in noble-updates.
GPU_NODE_IMAGE_DRIVER_BRANCH = GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH
# Branches NVIDIA validates precompiled driver images for with v26.7.0, per OS tag (NVIDIA/
# cloud-native-docs gpu-operator/platform-support.rst "Supported Precompiled Drivers", commit
# 70fde02; built daily for the newest kernel of 5.15 on 22.04, 6.8 on 22.04/24.04, 7.0 on 26.04:
# NVIDIA/gpu-driver-container .github/precompiled-matrix-config.json).
GPU_OPERATOR_PRECOMPILED_BRANCHES: dict[str, tuple[str, ...]] = {
    "ubuntu22.04": ("580", "595"),
    "ubuntu24.04": ("580", "595"),
    "ubuntu26.04": ("595",),
}

IMAGES: dict[str, ImagePin] = {
    # The smoke test's container: nvidia-smi is injected through CDI (real driver) or by the
    # simulated driver, so a plain Ubuntu base is enough and small.
    "smoke-test": ImagePin(
        "docker.io/library/ubuntu",
        "24.04",
        "sha256:66460d557b25769b102175144d538d88219c077c678a49af4afca6fbfc1b5252",
    ),
    "kind-node": ImagePin(
        "docker.io/kindest/node",
        "v1.34.0",
        "sha256:7416a61b42b1662ca6ca89f02028ac133a309a2a30ba309614e8ec94d976dc5a",
    ),
    # Velero's AWS object-store plugin (init container of CHARTS["velero"]): v1.13.x pairs with
    # Velero v1.17.x, the server chart 11.1.1 runs by default (values.yaml image.tag v1.17.0).
    # Digest as Renovate recorded it from docker.io (shepherdjerred/monorepo,
    # packages/homelab/src/cdk8s/src/versions.ts); not re-read from the registry here, and a
    # wrong digest fails the pull rather than running another image.
    "velero-plugin-aws": ImagePin(
        "docker.io/velero/velero-plugin-for-aws",
        "v1.13.2",
        "sha256:25c3a0a043fc396a0593a3da0aa16ed1f39df74883bda42c4588fc8877b72bde",
    ),
    # The smoke test's allReduce case: AWS's nccl-tests image (CUDA 13.0.2, EFA installer 1.48.0,
    # aws-ofi-nccl 1.19.0, NCCL 2.30.4, nccl-tests 2.18.3 built with MPI=1; Open MPI under
    # /opt/amazon/openmpi; recipe: aws-samples/awsome-distributed-training
    # micro-benchmarks/nccl-tests/nccl-tests.Dockerfile). Digest as AWS recorded it for this tag
    # (awslabs/awsome-distributed-ai 1072473d, examples/use-cases/gpu-cluster-failure-patterns/
    # pins.env); not re-read from the registry here: a wrong digest fails the pull.
    "nccl-tests": ImagePin(
        "public.ecr.aws/hpc-cloud/nccl-tests",
        "cuda13.0.2-efa1.48.0-ofiv1.19.0-ncclv2.30.4-1-testsv2.18.3",
        "sha256:a5390d3f0eb50f3e5854085e2ae0fef90b9eb4f3b7486ed4cab0d47864809d4c",
    ),
}

@dataclass(frozen=True)
class SignedDownload:
    """A tarball fetched at image build time and checked against its publisher's signing key."""

    version: str
    url: str
    key_fingerprint: str


# AWS's EFA software for GPU node images (components/images/document.py): aws-efa-installer
# 1.51.0 (2026-10-22; libfabric 2.7.0amzn2.0, rdma-core 65.0, the OFI NCCL plugin 1.22.0), its
# GPG key's fingerprint as the EC2 user guide (efa-verify.html) prints it.
EFA_INSTALLER = SignedDownload("1.51.0", "https://efa-installer.amazonaws.com",
                               "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC")

# The NVIDIA Container Toolkit a GPU node image carries for `gpuStack.toolkit: host`
# (components/images/document.py, docs/adr/0046): NVIDIA's apt repository, its signing key's
# fingerprint (the long key id apt names, DDCAE044F796ECB0, is its tail), and the version of all
# five packages (nvidia-container-toolkit-operator-extensions: the .cdi and .legacy runtimes the
# operator's nvidia-cdi and nvidia-legacy RuntimeClasses name, components/aws/scripts/ck8s-node.sh
# host_toolkit). 1.20.0, the toolkit image the GPU Operator pin deploys otherwise: its catalog entry
# (components/addons/gpu_operator.py container-toolkit) takes its tag from here, one toolkit either way.
# Package names and their exact-version dependencies: NVIDIA/nvidia-container-toolkit v1.20.0
# packaging/debian/control; the versioned install: its install guide, "With apt".
@dataclass(frozen=True)
class AptRepository:
    """Packages installed at image build time from a publisher's apt repository whose key must have
    a recorded fingerprint."""

    version: str  # the upstream release
    deb_version: str  # what `apt-get install <package>=<deb_version>` names
    packages: tuple[str, ...]
    key_url: str
    key_fingerprint: str
    source_line: str  # the sources.list entry: `{keyring}` the dearmored key's path, `{arch}` amd64 or arm64


NVIDIA_CONTAINER_TOOLKIT = AptRepository(
    "1.20.0", "1.20.0-1",
    ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "nvidia-container-toolkit-operator-extensions",
     "libnvidia-container-tools", "libnvidia-container1"),
    "https://nvidia.github.io/libnvidia-container/gpgkey",
    "C95B321B61E88C1809C4F759DDCAE044F796ECB0",
    "deb [signed-by={keyring}] https://nvidia.github.io/libnvidia-container/stable/deb/{arch} /",
)

@dataclass(frozen=True)
class VerifiedDownload:
    """A release binary fetched at image build time and checked against a recorded sha256 per
    architecture before it runs."""

    version: str
    url: str  # `{arch}` is the architecture, amd64 or arm64
    sha256: dict[str, str]
    source: str  # where the checksums were recorded


# regctl, which exports the node images' preloaded images (components/images/preload_steps.py):
# the release binaries of regclient/regclient v0.5.3 (commit 63bcd1a). The checksums as a third
# party's Bazel file pins them (a `rules_release` repositories.bzl, http_file regctl_linux_amd64 /
# regctl_linux_arm64); regclient's release page was not read here.
REGCTL = VerifiedDownload(
    "v0.5.3", "https://github.com/regclient/regclient/releases/download/v0.5.3/regctl-linux-{arch}",
    {"amd64": "5141569cd0ef6e52a9dc67391c432f1bdd0cfd2d3b82d3f22d56f94feab7203e",
     "arm64": "380105c05c6c69ea3d35a8efeec0ccfa1bdfc38a876bf7d473be06d7267bae99"},
    "rules_release repositories.bzl (Bazel http_file regctl_linux_{amd64,arm64}, v0.5.3)")

# Tools the `local` tier builds from Go modules (tools/go.mod pins the same versions; a test
# keeps the two in step).
TOOLS: dict[str, str] = {
    "pulumi": "v3.272.0",
    "pulumi-resource-kubernetes": "v4.34.2",
    "kubernetes": "v1.34.2",
    # The kind CLI release whose default node image is IMAGES["kind-node"] (kind v0.30.0,
    # pkg/apis/config/defaults/image.go): the oldest CLI the kind stack accepts.
    "kind": "v0.30.0",
}

# Canonical's Ubuntu AMIs are resolved per region from this SSM public parameter family,
# never hard-coded ids.
UBUNTU_AMI_SSM_PARAMETER = "/aws/service/canonical/ubuntu/server/24.04/stable/current/{arch}/hvm/ebs-gp3/ami-id"


def chart(name: str) -> ChartPin:
    return CHARTS[name]


def image(name: str) -> ImagePin:
    return IMAGES[name]


def track(name: str) -> SnapTrack:
    return SNAP_TRACKS[name]


_EXACT = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$")


def is_exact_version(version: str) -> bool:
    """True for an exact release (`1.2.3`, `v1.2.3`, `v1.2.3-rc.1`); false for `latest`, ranges, ``."""
    return bool(_EXACT.match(version))
