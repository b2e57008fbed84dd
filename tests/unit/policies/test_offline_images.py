"""`offline-images` (issue 29, docs/adr/0043; by class: issue 45): an offline or mirrored stack's
Helm values and Kubernetes objects take every image from its mirror, judged by where a reference
resolves (any registry but the mirror's is refused: public, vendor, regional, with a port, another
account's ECR, localhost, none at all), in every spelling a chart, manifest or custom resource uses;
the mirror's own references, digests, addresses, URLs and words pass."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from components.addons.image_refs import PUBLIC_HOSTS
from components.policies.facts import StackFacts
from components.policies.offline_images import OFFLINE_IMAGES, registry_of
from tests.unit.policies.helpers import violations

MIRROR = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
RELEASE = "kubernetes:helm.sh/v3:Release"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _facts(offline: bool = True, mirror: str | None = MIRROR) -> StackFacts:
    base = StackFacts(environment="airgap", platform="aws", api_allow_list=(), control_plane_count=1, spot_pools=(),
                      gpu_pools=("l4",), dra=True, smoke_enabled=True, smoke_namespace="gpu-smoke-test", protect=False,
                      retain_on_delete=False, backup_region=None)
    return replace(base, offline=offline, mirror=mirror)


def _release(values: dict[str, Any]) -> list[str]:
    # A chart the image catalog does not know: only what the values say is judged.
    return violations(OFFLINE_IMAGES, RELEASE, {"chart": "team-chart", "values": values}, facts=_facts())


@pytest.mark.parametrize("values", [
    {"operator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": "v26.7.0"}},
    {"image": "nvcr.io/nvidia/k8s-dra-driver-gpu:v0.5.0"},
    {"image": {"registry": "quay.io", "repository": "prometheus/node-exporter"}},
    {"global": {"imageRegistry": "ghcr.io/kai-scheduler"}},  # a host-qualified string anywhere
    {"sidecar": {"image": "busybox:1.36"}},  # no host: Docker Hub
    {"init": [{"name": "plugin", "image": "docker.io/velero/velero-plugin-for-aws:v1.13.2@sha256:" + "a" * 64}]},
    {"pause": {"image": "registry.k8s.io/pause:3.10"}},
    {"exporter": {"image": "public.ecr.aws/eks/aws-efa-k8s-device-plugin:v0.5.20"}},
    {"nfd": {"image": {"repository": "registry-1.docker.io/library/ubuntu"}}},
    {"dcgmImage": "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3"},
    # issue 45: registries no list of public hosts names
    {"image": "harbor.internal:8443/mirror/nvcr.io/nvidia/gpu-operator:v26.7.0"},  # another registry, a port
    {"image": "registry:5000/team/tool:1"},  # a port, no dot
    {"image": "localhost:5000/x:1"},
    {"image": {"repository": "localhost/x"}},
    {"image": "us-docker.pkg.dev/project/repo/app:2.1"},  # a regional registry
    {"image": "mcr.microsoft.com/oss/kubernetes/pause:3.9"},  # a vendor's
    {"image": "987654321098.dkr.ecr.us-east-1.amazonaws.com/team/app:1"},  # another account's ECR
    {"image": "123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example/x:1"},  # the mirror's name as a prefix
    {"image": {"registry": "Quay.IO", "repository": "prometheus/node-exporter"}},  # case
    {"image": "ubuntu@sha256:" + "d" * 64},  # no registry, by digest
    {"args": {"webhook": "registry.gitlab.com/group/webhook:v3"}},  # anywhere: a full reference with a tag
    {"env": [{"name": "VALIDATOR_IMAGE", "value": "ghcr.io/nvidia/validator@sha256:" + "e" * 64}]},
    # split references (chart values and custom resources such as the ClusterPolicy)
    {"vgpuManager": {"repository": "", "image": "vgpu-manager", "version": ""}},  # nothing names a registry
    {"driver": {"image": "driver", "version": "595"}},  # only the image: docker.io
    {"toolkit": {"repository": "harbor.internal:8443/nvidia", "image": "container-toolkit", "version": "v1.20.0"}},
    {"dcgm": {"registry": "", "repository": "nvidia/dcgm", "tag": "4"}},  # empty registry: the repository's
])
def test_every_spelling_outside_the_mirror_is_caught(values: dict[str, Any]) -> None:
    found = _release(values)
    assert len(found) == 1 and f"every image under {MIRROR}" in found[0] and "not the mirror" in found[0], found


@pytest.mark.parametrize("values", [
    {"operator": {"repository": f"{MIRROR}/nvcr.io/nvidia", "image": "gpu-operator", "version": "v26.7.0"}},
    {"image": {"registry": f"{MIRROR}/docker.io", "repository": "library/ubuntu", "digest": "sha256:" + "b" * 64}},
    {"image": {"tag": "v1.2.3", "pullPolicy": "IfNotPresent"}},
    {"server": "https://kubernetes.default.svc:443", "api": "10.0.0.1:6443"},
    {"subject": {"organization": "system:masters"}, "mode": "dra:true", "note": "see quay.io docs"},
    {"repository": "https://helm.ngc.nvidia.com/nvidia"},  # a chart repository URL, not an image
    # issue 45 look-alikes: the mirror in other spellings, and strings that are not references
    {"image": f"{MIRROR.upper()}/registry.k8s.io/pause:3.10"},  # registry names are case-insensitive
    {"image": {"registry": MIRROR, "repository": "docker.io/library/ubuntu", "tag": "24.04"}},
    {"toolkit": {"repository": f"{MIRROR}/nvcr.io/nvidia", "image": "container-toolkit", "version": "v1.20.0"}},
    {"vgpuManager": {"repository": f"{MIRROR}/nvcr.io/nvidia", "image": "", "version": ""}},  # blanked image
    {"nodeSelector": {"nvidia.com/gpu.present": "true", "node.kubernetes.io/instance-type": "p5.48xlarge"}},
    {"resources": {"limits": {"nvidia.com/gpu": "1"}}, "label": "topology.k8s.aws/network-node-layer-1"},
    {"url": "https://registry.example.com/v2/", "endpoint": "s3.eu-west-1.amazonaws.com:443"},
    {"command": ["sleep", "3600"], "tag": "v1.2.3", "version": "1.2.3"},
])
def test_mirror_references_and_look_alikes_pass(values: dict[str, Any]) -> None:
    assert _release(values) == []


def test_objects_are_judged_too_in_offline_or_mirrored_stacks_only() -> None:
    dep = {"spec": {"template": {"spec": {"containers": [{"name": "x", "image": "ghcr.io/a/b:1"}]}}}}
    assert len(violations(OFFLINE_IMAGES, DEPLOYMENT, dep, facts=_facts())) == 1
    assert len(violations(OFFLINE_IMAGES, DEPLOYMENT, dep, facts=_facts(offline=False))) == 1  # mirrored
    assert violations(OFFLINE_IMAGES, DEPLOYMENT, dep, facts=_facts(offline=False, mirror=None)) == []
    # AWS objects name upstreams by design (a pull-through cache rule): out of scope.
    rule = {"ecrRepositoryPrefix": "quay.io", "upstreamRegistryUrl": "quay.io"}
    assert violations(OFFLINE_IMAGES, "aws:ecr/pullThroughCacheRule:PullThroughCacheRule", rule, facts=_facts()) == []


def test_registry_of_reads_hosts_as_distribution_does() -> None:
    assert registry_of("ubuntu:24.04", True) == "docker.io"
    assert registry_of("ubuntu:24.04", False) is None  # not at an image key: a word with a colon
    assert registry_of("nvcr.io/nvidia/cuda:12", False) == "nvcr.io"
    assert registry_of("localhost:5000/x:1", True) == "localhost:5000"  # not public, and not the mirror
    assert registry_of("localhost:5000/x:1", True) not in PUBLIC_HOSTS
    assert registry_of("nvidia.com/gpu", False) is None  # a resource name, not a reference
    assert registry_of("sha256:" + "c" * 64, True) is None


def test_the_airgap_plan_names_no_public_image_and_a_public_override_is_caught() -> None:
    from components.plan.run import PROJECT_DIR, plan_config, plan_stack
    from components.policies.offline import evaluate_plan
    from components.settings.load import read_stack_file

    result = evaluate_plan(plan_stack("aws-airgap"))
    assert [f for f in result.findings if f.policy == "offline-images"] == []
    config = copy.deepcopy(read_stack_file(PROJECT_DIR / "stacks" / "Pulumi.aws-airgap.yaml"))
    config["ck8s-gpu:settings"]["gpuStack"]["addons"] = {
        "draDriver": {"values": {"image": {"repository": "nvcr.io/nvidia/k8s-dra-driver-gpu"}}}}
    caught = [f for f in evaluate_plan(plan_config(config, "aws-airgap-public", "variant")).findings
              if f.policy == "offline-images"]
    assert len(caught) == 1 and "image.repository" in caught[0].message and caught[0].level == "mandatory"


def test_an_image_a_pinned_chart_would_take_from_its_default_is_caught() -> None:
    """Values that say nothing about an image leave the chart's default, a public one."""
    found = violations(OFFLINE_IMAGES, RELEASE, {"chart": "dra-driver-nvidia-gpu", "version": "0.5.0",
                                                 "repositoryOpts": {"repo": "oci://registry.k8s.io"},
                                                 "values": {"gpuResourcesEnabledOverride": True}}, facts=_facts())
    assert found and all("is unset, so the chart pulls its default" in f for f in found), found
