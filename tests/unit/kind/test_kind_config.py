"""The generated kind config: golden files, kind's v1alpha4 schema, and what it mirrors from a pool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kind import config as kc
from components.kind.schema import validation_errors
from components.settings.model import Settings
from components.tables import pins
from components.validate import load_stack
from components.validate import parse as parse_settings
from tests.helpers.golden import assert_golden

ROOT = Path(__file__).resolve().parents[3]
KIND_STACK = ROOT / "stacks" / "Pulumi.kind.yaml"
GOLDEN_KIND_STACK = Path("kind/kind-config.yaml")
GOLDEN_K8S_133 = Path("kind/kind-config-k8s-1.33.yaml")
# kind v0.29.0's default node image (pkg/apis/config/defaults/image.go at tag v0.29.0): the render
# path for a pre-1.34 image, where DRA still needs gates and beta APIs.
IMAGE_133 = pins.ImagePin(
    "docker.io/kindest/node", "v1.33.1", "sha256:050072256b9a903bd914c0b2866828150cb229cea0efe5892e2b644d5dd3b34f"
)


def settings(**raw: Any) -> Settings:
    base: dict[str, Any] = {
        "platform": "kind",
        "nodePools": [
            {"name": "small", "instanceType": "g6.xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1},
            {"name": "big", "instanceType": "p5.48xlarge", "minSize": 3, "desiredSize": 3, "maxSize": 3,
             "labels": {"team": "ml"},
             "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                        {"key": "dedicated", "effect": "NoExecute"}]},
        ],
        "smokeTest": {"gpus": 1},
    }
    base.update(raw)
    return parse_settings(base)


def doc_for(s: Settings, minor: int = 34) -> dict[str, Any]:
    return kc.kind_config(s, kc.node_image(), minor)


# ---------------------------------------------------------------------------- golden + schema


def test_kind_stack_config_matches_golden_and_kinds_schema() -> None:
    text = kc.render_kind_config(load_stack(KIND_STACK))
    assert_golden(GOLDEN_KIND_STACK, text)
    assert validation_errors(yaml.safe_load(text)) == []


def test_pre_134_config_matches_golden_and_kinds_schema() -> None:
    text = kc.render(kc.kind_config(load_stack(KIND_STACK), IMAGE_133, kc.kubernetes_minor(IMAGE_133)))
    assert_golden(GOLDEN_K8S_133, text)
    assert validation_errors(yaml.safe_load(text)) == []


def test_golden_files_are_what_kind_would_read() -> None:
    """The golden file is the artifact reviewed: it must parse to the document the code builds."""
    s = load_stack(KIND_STACK)
    on_disk = yaml.safe_load((ROOT / "tests" / "golden" / GOLDEN_KIND_STACK).read_text())
    assert on_disk == doc_for(s, kc.kubernetes_minor(kc.node_image()))


def _valid() -> dict[str, Any]:
    return doc_for(load_stack(KIND_STACK))


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda d: d.update(apiVersion="kind.x-k8s.io/v1alpha3"), "apiVersion"),
        (lambda d: d.update(kind="Config"), "kind"),
        (lambda d: d.update(nodez=[]), "nodez: Extra inputs are not permitted"),
        (lambda d: d["networking"].update(pod_subnet="10.0.0.0/16"), "pod_subnet: Extra inputs"),
        (lambda d: d["networking"].update(podSubnet="10.1.0.0/99"), "podSubnet"),
        (lambda d: d["networking"].update(podSubnet="10.1.0.0/16,10.2.0.0/16"), "only one CIDR"),
        (lambda d: d["networking"].update(serviceSubnet="fd00::/108"), "expected an IPv4 CIDR"),
        (lambda d: d["networking"].update(kubeProxyMode="userspace"), "kubeProxyMode"),
        (lambda d: d["networking"].update(apiServerPort="6443"), "apiServerPort"),
        (lambda d: d["networking"].update(apiServerPort=70000), "apiServerPort"),
        (lambda d: d.update(name="CK8S_GPU"), "name"),
        (lambda d: d["nodes"][1].update(role="gpu-worker"), "nodes.1.role"),
        (lambda d: d["nodes"][1].update(image=""), "nodes.1.image"),
        (lambda d: d["nodes"][1]["labels"].update(flag=True), "nodes.1.labels.flag"),
        (lambda d: d["nodes"][0].update(role="worker"), "at least one control-plane"),
        (lambda d: d["nodes"][0].update(kubeadmConfigPatches=["nodeRegistration: {}"]), "with a `kind`"),
        (lambda d: d.update(containerdConfigPatches=["[plugins.\n"]), "containerdConfigPatches"),
        (lambda d: d.update(featureGates={"DynamicResourceAllocation": "true"}), "featureGates"),
        (lambda d: d["nodes"][1].update(extraPortMappings=[{"containerPort": 80, "protocol": "ICMP"}]), "protocol"),
    ],
)
def test_schema_rejects_what_kind_rejects(mutate: Any, error: str) -> None:
    doc = _valid()
    assert validation_errors(doc) == []
    mutate(doc)
    errors = validation_errors(doc)
    assert errors and any(error in e for e in errors), errors


def test_schema_accepts_kinds_optional_fields() -> None:
    doc = _valid()
    doc["networking"].update(ipFamily="dual", podSubnet="10.1.0.0/16,fd00:10:1::/56", kubeProxyMode="none",
                             apiServerAddress="127.0.0.1", apiServerPort=6443, dnsSearch=[])
    doc["nodes"][1].update(
        extraMounts=[{"hostPath": "/tmp", "containerPath": "/host-tmp", "readOnly": True, "propagation": "None"}],
        extraPortMappings=[{"containerPort": 80, "hostPort": 8080, "protocol": "tcp"}],
    )
    assert validation_errors(doc) == []


def test_render_refuses_a_config_kind_would_reject() -> None:
    doc = _valid()
    doc["nodes"][0]["role"] = "master"
    with pytest.raises(ValueError, match=r"generated kind config is invalid: nodes\.0\.role"):
        kc.render(doc)


# ---------------------------------------------------------------------------- what it mirrors


def test_workers_mirror_the_chosen_pool() -> None:
    s = settings(kind={"mirrorPool": "big"})
    doc = doc_for(s)
    control, *workers = doc["nodes"]
    assert control["role"] == "control-plane" and len(workers) == 3
    assert all(n["role"] == "worker" for n in workers)
    assert {n["image"] for n in doc["nodes"]} == {pins.image("kind-node").ref}
    assert "@sha256:" in control["image"]
    # The pool's own labels, and the simulated-pool label fake-gpu-operator assigns GPUs by: its
    # value is the pool name (a stack cannot set that label itself: see the test below).
    assert workers[0]["labels"] == {
        "nvidia.com/gpu.deploy.dra-plugin-gpu": "true",
        "run.ai/simulated-gpu-node-pool": "big",
        "team": "ml",
    }
    join = yaml.safe_load(workers[0]["kubeadmConfigPatches"][0])
    assert join == {"kind": "JoinConfiguration", "nodeRegistration": {"taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]}}
    # The control plane is schedulable, like Canonical Kubernetes control planes.
    init = yaml.safe_load(control["kubeadmConfigPatches"][0])
    assert init == {"kind": "InitConfiguration", "nodeRegistration": {"taints": []}}


def test_a_stack_cannot_spoof_the_simulated_pool_label() -> None:
    from components.settings.load import SettingsError

    spoofed = r"nodePools\[1\]\.labels\.run\.ai/simulated-gpu-node-pool: set by ck8s-gpu"
    with pytest.raises(SettingsError, match=spoofed):
        settings(nodePools=[
            {"name": "small", "instanceType": "g6.xlarge"},
            {"name": "big", "instanceType": "g6.xlarge", "labels": {"run.ai/simulated-gpu-node-pool": "spoofed"}},
        ])


def test_first_pool_is_mirrored_by_default_and_untainted_pools_get_no_patch() -> None:
    s = settings(nodePools=[{"name": "solo", "instanceType": "g5.xlarge", "desiredSize": 2, "maxSize": 2,
                             "taints": []}])
    _, *workers = doc_for(s)["nodes"]
    assert len(workers) == 2
    assert workers[0]["labels"]["run.ai/simulated-gpu-node-pool"] == "solo"
    assert "kubeadmConfigPatches" not in workers[0]
    assert doc_for(settings())["nodes"][1]["labels"]["run.ai/simulated-gpu-node-pool"] == "small"


def test_device_plugin_allocation_does_not_label_for_the_dra_plugin() -> None:
    s = settings(gpuStack={"allocation": "device-plugin"})
    labels = doc_for(s)["nodes"][1]["labels"]
    assert kc.FAKE_DRA_PLUGIN_LABEL not in labels
    assert labels["run.ai/simulated-gpu-node-pool"] == "small"


def test_networking_mirrors_the_stack_cidrs_and_enables_cdi() -> None:
    s = settings(kubernetes={"podCidr": "10.50.0.0/16", "serviceCidr": "10.60.0.0/24"})
    doc = doc_for(s)
    assert doc["networking"] == {"podSubnet": "10.50.0.0/16", "serviceSubnet": "10.60.0.0/24"}
    assert doc["name"] == "ck8s-gpu"
    import tomllib

    (patch,) = doc["containerdConfigPatches"]
    assert tomllib.loads(patch) == {"plugins": {"io.containerd.grpc.v1.cri": {"enable_cdi": True}}}
    assert "version" not in tomllib.loads(patch)


@pytest.mark.parametrize(
    ("minor", "gates", "runtime"),
    [
        (36, None, None),
        (34, None, None),
        (33, {"DynamicResourceAllocation": True}, {"resource.k8s.io/v1beta1": "true",
                                                    "resource.k8s.io/v1beta2": "true"}),
        (32, {"DynamicResourceAllocation": True}, {"resource.k8s.io/v1beta1": "true"}),
    ],
)
def test_dra_feature_gates_only_where_the_version_needs_them(minor: int, gates: Any, runtime: Any) -> None:
    doc = doc_for(settings(), minor)
    assert doc.get("featureGates") == gates
    assert doc.get("runtimeConfig") == runtime


def test_dra_before_132_is_refused() -> None:
    with pytest.raises(ValueError, match=r"needs 1\.32 or newer"):
        kc.gate_settings(settings(), 31)


def test_node_image_is_kubernetes_134_or_newer() -> None:
    assert kc.kubernetes_minor(kc.node_image()) >= 34


# ---------------------------------------------------------------------------- facts and problems


def test_facts_hold_only_the_mirrored_pool_on_the_images_minor() -> None:
    facts = kc.kind_facts(settings(kind={"mirrorPool": "big"}))
    (pool,) = facts.pools
    assert (pool.name, pool.nodes, pool.gpus_per_node, pool.product_name, pool.memory_mib) == (
        "big", 3, 8, "NVIDIA H100 80GB HBM3", 81559)
    assert facts.simulated_gpus and facts.has_kubelet and facts.platform == "kind"
    assert facts.kubernetes_minor == kc.kubernetes_minor(kc.node_image())
    assert sum(p.nodes * p.gpus_per_node for p in facts.pools) == 24


def test_kind_stack_has_no_problems() -> None:
    assert kc.kind_problems(load_stack(KIND_STACK)) == []


def test_the_smoke_test_must_fit_the_mirrored_pool_one_case_at_a_time() -> None:
    """One rule (settings.rules via gpus_provided): kind runs only the mirrored pool, and the cases
    run one after another, so a gang of 13 fits 24 GPUs beside a 13-pod main case."""
    from components.settings import SettingsError

    with pytest.raises(SettingsError) as err:
        settings(smokeTest={"gpus": 2})
    assert err.value.problems == [
        ("settings.smokeTest.gpus",
         "needs 2 GPUs but kind simulates only pool 'small' (1 GPUs); set settings.kind.mirrorPool or lower the count"),
    ]
    assert settings(smokeTest={"gpus": 2}, kind={"mirrorPool": "big"}).smoke_test.gpus == 2
    assert settings(smokeTest={"gpus": 13, "gang": True}, kind={"mirrorPool": "big"}).smoke_test.gang
