"""AddonSet under the mock engine: what is registered, with which dependencies and options."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components.addons.addon_set import AddonSet
from components.plan.mockengine import MASK, PlanRun, run_program
from components.settings import Settings
from tests.unit.addons.helpers import StandInCluster, ancestors, by_name, settings

RELEASE = "kubernetes:helm.sh/v3:Release"
WAIT = "pulumi-python:dynamic/ck8s-gpu:ClusterPolicyReady"


def run(s: Settings) -> PlanRun:
    def program() -> None:
        addons = AddonSet("gpu", s, StandInCluster(s))
        pulumi.export("smoke", pulumi.Output.all(*[r.urn for r in addons.smoke_dependencies]))
        pulumi.export("releases", sorted(addons.releases))

    return run_program(program, {}, stack="test")




@pytest.fixture(scope="module")
def aws() -> PlanRun:
    return run(settings("aws"))


def test_operator_then_cluster_policy_gate_and_the_dra_driver_beside_them(aws: PlanRun) -> None:
    res = by_name(aws)
    gate = res["gpu-gpu-operator-cluster-policy-ready"]
    assert gate.type == WAIT
    assert gate.inputs["objectName"] == "cluster-policy" and gate.inputs["operatorNamespace"] == "gpu-operator"
    assert gate.inputs["minGpuNodes"] == 1  # settings("aws"): one pool of one node
    assert gate.inputs["kubeconfig"] == MASK
    assert res["gpu-gpu-operator"].urn in gate.dependencies
    # docs/adr/0019: the DRA kubelet plugin's init container waits for the driver itself
    assert not {"gpu-gpu-operator", "gpu-gpu-operator-cluster-policy-ready"} & ancestors(aws, "gpu-dra-driver")


def test_the_gpu_operator_waits_for_the_servicemonitor_crd_not_for_prometheus(aws: PlanRun) -> None:
    """The operator decides once, when it reconciles, whether DCGM's ServiceMonitor can exist
    (controllers/object_controls.go ServiceMonitor, v26.7.0): the monitoring CRDs go first, in
    seconds, while kube-prometheus-stack's workloads install beside it."""
    res = by_name(aws)
    operator = res["gpu-gpu-operator"]
    assert operator.inputs["values"]["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    assert res["gpu-kube-prometheus-stack-crds"].urn in operator.dependencies
    assert "gpu-kube-prometheus-stack" not in ancestors(aws, "gpu-gpu-operator")
    # without a monitoring add-on, or with the CRDs already in the cluster, nothing to wait for
    off = run(settings("aws", gpuStack={"addons": {"kubePrometheusStack": {"enabled": False},
                                                    "observability": {"enabled": False}}}))
    assert not [n for n in ancestors(off, "gpu-gpu-operator") if "prometheus" in n]
    present = run(settings("aws", gpuStack={"clusterProvides": ["monitoring-crds"],
                                            "addons": {"kubePrometheusStack": {"enabled": True}}}))
    assert "gpu-kube-prometheus-stack-crds" not in ancestors(present, "gpu-gpu-operator")


def test_every_crds_only_wait_has_a_crds_first_resource_to_wait_for() -> None:
    """Addon.after_crds_of resolves to the provider's CrdsFirst: its chart's CRDs are applied by us."""
    from components.addons.catalog import ADDONS
    from components.addons.crds import BY_CHART

    for a in ADDONS:
        for cap in a.after_crds_of:
            providers = [p for p in ADDONS if cap in p.provides(settings("aws"))]
            assert providers, f"{a.name}: nothing in the catalog provides {cap}"
            for p in providers:
                handling = BY_CHART.get(p.chart_pin or "")
                assert handling is not None and handling.manual, f"{a.name} -> {p.name}: no CrdsFirst"


def test_kai_queues_and_observability_never_wait_for_the_gpu_stack(aws: PlanRun) -> None:
    gpu = {"gpu-gpu-operator", "gpu-gpu-operator-cluster-policy-ready", "gpu-dra-driver"}
    for name in ("gpu-kai-scheduler", "gpu-kai-queues", "gpu-kube-prometheus-stack", "gpu-observability"):
        assert not ancestors(aws, name) & gpu, name
    assert "gpu-kai-scheduler" in ancestors(aws, "gpu-kai-queues")
    assert "gpu-kube-prometheus-stack" in ancestors(aws, "gpu-observability")


def test_longest_release_chain_is_the_operator_and_its_gate_or_kai_and_queues(aws: PlanRun) -> None:
    res = by_name(aws)
    own = {n for n, x in res.items() if x.type in (RELEASE, WAIT)}

    def depth(name: str) -> int:
        return 1 + max((depth(a) for a in ancestors(aws, name) & own), default=0)

    assert max(depth(n) for n in own) == 2  # nothing chains three releases and gates deep any more
    assert depth("gpu-gpu-operator-cluster-policy-ready") == depth("gpu-kai-queues") == 2
    assert depth("gpu-dra-driver") == 1


def test_every_release_is_wired_and_bounded(aws: PlanRun) -> None:
    res = by_name(aws)
    component = res["gpu"]
    assert component.type == "ck8s-gpu:index:AddonSet"
    releases = [x for x in aws.resources if x.type == RELEASE]
    assert {x.name for x in releases} == {
        "gpu-aws-cloud-controller-manager", "gpu-gpu-operator", "gpu-dra-driver", "gpu-kai-scheduler",
        "gpu-kai-queues", "gpu-kube-prometheus-stack", "gpu-observability"}
    for x in releases:
        assert x.parent == component.urn
        assert x.provider.startswith("cluster-k8s"), x.provider
        assert res["cluster-api-ready"].urn in x.dependencies
        assert x.inputs["timeout"] > 0  # seconds (numbers travel as floats on the wire)
        assert x.timeouts["create"].endswith("s")
        ns = x.inputs["namespace"]
        if ns == "kube-system":  # the cluster's own namespace: neither created nor relabelled
            assert "gpu-ns-kube-system" not in res
        else:
            assert res[f"gpu-ns-{ns}"].urn in x.dependencies
        assert x.inputs["createNamespace"] is False
    assert res["gpu-gpu-operator"].inputs["timeout"] == 20 * 60
    assert res["gpu-gpu-operator"].inputs["disableOpenapiValidation"] is True


def test_the_ccm_release_adopts_the_one_the_aws_cluster_made_before(aws: PlanRun) -> None:
    """It used to be AwsCluster's own release: an alias to that URN moves it, never replaces it."""
    from components.addons.aws_cloud_controller_manager import previous_urn

    ccm = by_name(aws)["gpu-aws-cloud-controller-manager"]
    old = previous_urn(settings("aws"), "test", "ck8s-gpu")
    assert old.endswith("::ck8s-gpu:index:AwsCluster$ck8s-gpu:index:AwsCloudControllerManager"
                        "$kubernetes:helm.sh/v3:Release::ck8s-dev-eu-north-1-ccm-release")
    assert ccm.aliases == [old], ccm.aliases


def test_release_inputs_are_readable_and_pinned(aws: PlanRun) -> None:
    res = by_name(aws)
    op = res["gpu-gpu-operator"].inputs
    assert (op["chart"], op["version"], op["repositoryOpts"]["repo"]) == (
        "gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia")
    dra = res["gpu-dra-driver"].inputs
    assert dra["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert dra["name"] == "dra-driver-nvidia-gpu" and dra["namespace"] == "nvidia-dra-driver-gpu"
    assert dra["values"]["resourceApiVersion"] == "resource.k8s.io/v1"
    queues = res["gpu-kai-queues"].inputs
    assert queues["chart"].endswith("charts/kai-queues") and "version" not in queues
    assert [q["name"] for q in queues["values"]["queues"]] == ["gpu-root", "default", "default-queue", "smoke-test"]


def test_namespaces_carry_pod_security_labels(aws: PlanRun) -> None:
    levels = {
        x.inputs["metadata"]["name"]: x.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        for x in aws.resources if x.type == "kubernetes:core/v1:Namespace"
    }
    assert levels == {"gpu-operator": "privileged", "nvidia-dra-driver-gpu": "privileged",
                      "kai-scheduler": "baseline", "monitoring": "privileged",
                      "gpu-observability": "restricted"}


def test_the_smoke_test_waits_for_every_release_and_gate_on_the_gpu_path(aws: PlanRun) -> None:
    """It judges an upgrade of any add-on a GPU job goes through, so it runs after them (the
    operator through its ClusterPolicy gate; the CCM, without which nodes keep their
    `uninitialized` taint); monitoring installs beside it (docs/adr/0019)."""
    urns = {x.name: x.urn for x in aws.resources}
    gates = {"gpu-operator": "gpu-gpu-operator-cluster-policy-ready"}
    expected = [urns[gates.get(n, f"gpu-{n}")] for n in ("aws-cloud-controller-manager", "gpu-operator",
                                                          "dra-driver", "kai-scheduler", "kai-queues")]
    assert sorted(aws.outputs["smoke"]) == sorted(expected)


def test_kind_profile_uses_the_fake_operator_and_the_real_kai() -> None:
    r = run(settings("kind"))
    urns = {x.name: x.urn for x in r.resources}
    assert r.outputs["releases"] == ["fake-gpu-operator", "kai-queues", "kai-scheduler",
                                     "kube-prometheus-stack", "observability"]
    on_path = ("fake-gpu-operator", "kai-queues", "kai-scheduler")  # not the monitoring ones
    assert sorted(r.outputs["smoke"]) == sorted(urns[f"gpu-{n}"] for n in on_path)
    assert not [x for x in r.resources if x.type == WAIT]  # no ClusterPolicy without the operator
    obs = by_name(r)["gpu-observability"].inputs["values"]
    assert obs["serviceMonitor"]["enabled"] is True  # the fake exporter has no ServiceMonitor of its own


def test_invalid_graph_registers_nothing() -> None:
    s = settings("kind", gpuStack={"addons": {"gpuOperator": {"enabled": True}}})
    with pytest.raises(Exception, match="cannot both be enabled") as err:
        run(s)
    assert "add-on graph is invalid" in str(err.value)


def _inputs(r: PlanRun, name: str) -> dict[str, Any]:
    return by_name(r)[name].inputs


def test_local_installs_only_own_charts_when_crds_exist() -> None:
    s = settings("local", gpuStack={"clusterProvides": ["kai-crds"]}, smokeTest={"scheduler": "default"})
    r = run(s)
    assert r.outputs["releases"] == ["kai-queues"]
    # The GPUs come from the cluster's own publisher; the queues' release is still waited for.
    assert r.outputs["smoke"] == [by_name(r)["gpu-kai-queues"].urn]


BACKUP = {"backup": {"region": "us-west-2"}}
CREDENTIALS = {"credentials": {"secretContents": {"cloud": "[default]\naws_access_key_id=AKIA\n"}}}


def run_wired(
    s: Settings, extra_values: dict[str, Any], with_dependency: bool = False, secret: bool = False
) -> PlanRun:
    def program() -> None:  # Outputs exist only inside the program's event loop
        cluster = StandInCluster(s)
        target = pulumi.CustomResource("test:index:Target", "backup-ready", {})
        extras = {k: pulumi.Output.secret(v) if secret else v for k, v in extra_values.items()}
        AddonSet("gpu", s, cluster, extra_values=extras,
                 extra_dependencies={"velero": [target]} if with_dependency else None)

    return run_program(program, {}, stack="test")


def test_extra_values_merge_secret_and_under_the_stack_override() -> None:
    s = settings("aws", **BACKUP, gpuStack={"addons": {"velero": {"values": {"schedules": {"cluster": {
        "schedule": "5 1 * * *"}}}}}})
    extra = {**CREDENTIALS, "schedules": {"cluster": {"schedule": "0 0 * * *"}}}
    r = run_wired(s, {"velero": extra}, with_dependency=True, secret=True)
    velero = by_name(r)["gpu-velero"]
    assert velero.inputs["values"] == MASK and "values" in velero.secret_paths  # the key never in clear
    values = velero.raw_inputs["values"]
    assert values["credentials"] == {"useSecret": True, "name": "velero-aws-credentials",
                                     "secretContents": CREDENTIALS["credentials"]["secretContents"]}
    assert values["schedules"]["cluster"]["schedule"] == "5 1 * * *"  # the stack keeps the last word
    assert values["configuration"]["backupStorageLocation"][0]["config"] == {"region": "us-west-2"}
    assert by_name(r)["backup-ready"].urn in velero.dependencies
    assert by_name(r)["gpu-ns-velero"].urn in velero.dependencies
    # Only the release given secret values is secret.
    assert isinstance(by_name(r)["gpu-kai-scheduler"].inputs["values"], dict)


def test_plain_extra_values_stay_readable() -> None:
    r = run_wired(settings("aws"), {"kai-scheduler": {"global": {"extra": 1}}})
    kai = by_name(r)["gpu-kai-scheduler"]
    assert kai.inputs["values"]["global"]["extra"] == 1 and "values" not in kai.secret_paths
    # merged over, not instead of, the computed values
    assert kai.inputs["values"]["global"]["gpuSharing"] is False and "defaultQueue" in kai.inputs["values"]


def test_extras_for_an_unknown_addon_are_refused_for_a_disabled_one_ignored() -> None:
    with pytest.raises(Exception, match="unknown add-on 'veleor'"):
        run_wired(settings("aws"), {"veleor": CREDENTIALS})
    r = run_wired(settings("aws"), {"velero": CREDENTIALS})  # no backup: velero is off
    assert "gpu-velero" not in by_name(r)


def test_velero_without_its_credentials_is_refused_before_anything_registers() -> None:
    s = settings("aws", **BACKUP)
    with pytest.raises(Exception, match=r"velero: its AWS credentials come from BackupTarget") as err:
        run(s)
    assert "add-on graph is invalid" in str(err.value)
    own = settings("aws", **BACKUP, gpuStack={"addons": {"velero": {"values": {"credentials": {
        "existingSecret": "my-velero-credentials"}}}}})
    velero = by_name(run(own))["gpu-velero"]
    assert velero.inputs["values"]["credentials"]["existingSecret"] == "my-velero-credentials"
