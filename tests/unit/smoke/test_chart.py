"""charts/gpu-smoke-test: lint, strict schemas for Kubernetes 1.34-1.36, golden renders, guards."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from components.kube.charts import chart_dir, render
from components.smoke.expectations import RELEASE_ANNOTATION, RELEASE_VALUE
from components.smoke.plan import SmokePlan
from tests.helpers import gateway, keda
from tests.helpers.golden import assert_golden
from tests.helpers.k8s_schema import VERSIONS, crd_schemas, custom_resource_errors, schema_errors
from tests.helpers.tools import cluster_bin_dir
from tests.unit.smoke import settings_fixtures as sf

PLANS = {
    "aws": lambda: sf.plan(sf.AWS),
    "aws-all-cases": lambda: sf.plan(sf.AWS_ALL_CASES),
    "aws-all-reduce": lambda: sf.plan(sf.AWS_ALL_REDUCE),
    "aws-mig-only": lambda: sf.plan(sf.AWS_MIG_ONLY),
    "aws-mig-pools": lambda: sf.plan(sf.AWS_MIG_POOLS),
    "aws-mps": lambda: sf.plan(sf.AWS_MPS),
    "aws-nvlink-group": lambda: sf.plan(sf.AWS_NVLINK_GROUP),
    "kind": lambda: sf.plan(sf.KIND),
    "local": lambda: sf.plan(sf.LOCAL),
    "local-compute-domain-first-available": lambda: sf.plan(sf.LOCAL_CD_FA),
    "local-inference": lambda: sf.plan(sf.LOCAL_INFERENCE),
}
# KAI's PodGroup (scheduling.run.ai/v2alpha2, KAI v0.17.0 pkg/apis/scheduling/v2alpha2/podgroup_types.go)
# has no upstream OpenAPI schema in kubernetes-validate: its spec is checked against these fields.
PODGROUP_SPEC_FIELDS = {"minMember", "minSubGroup", "queue", "priorityClassName", "preemptibility",
                        "topologyConstraint", "subGroups", "markUnschedulable", "schedulingBackoff",
                        "preemptionDelay", "stalenessGracePeriod"}


def compute_domain_errors(obj: dict[str, Any]) -> list[str]:
    """A ComputeDomain against the CRD's openAPIV3Schema (dra-driver-nvidia-gpu 95932046
    api/nvidia.com/resource/v1beta1/computedomain.go), unknown fields refused as a strict decoder would."""
    import jsonschema

    crds = Path(__file__).resolve().parents[3] / "tools/sim/crds"
    crd = yaml.safe_load((crds / "resource.nvidia.com_computedomains.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
    spec_fields = schema["properties"]["spec"]["properties"]
    errors += [f"unknown field spec.{k}" for k in obj.get("spec", {}) if k not in spec_fields]
    return errors


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the probe script) as literal blocks, so golden diffs stay readable."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def rendered(plan: SmokePlan) -> list[dict[str, Any]]:
    return render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)


@pytest.mark.parametrize("stack", sorted(PLANS))
def test_golden_render(stack: str) -> None:
    objs = rendered(PLANS[stack]())
    text = yaml.dump_all(objs, Dumper=_Dumper, sort_keys=False, default_flow_style=False)
    assert_golden(Path(f"charts/gpu-smoke-test/{stack}.yaml"), text)


# Case inference's custom resources (HTTPRoute, PodMonitor, ScaledObject), against the CRDs CI
# builds at the pins (tools/build.sh: Gateway API v1.6.1 standard channel, KEDA v2.21.1, the
# Prometheus Operator v0.93.1 `crds` output).
CASE_CRDS = {("gateway.networking.k8s.io/v1", "HTTPRoute"), ("keda.sh/v1alpha1", "ScaledObject"),
             ("monitoring.coreos.com/v1", "PodMonitor")}


@functools.cache
def case_crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """Only the three CRDs the case renders objects of: parsing every CRD of the three projects (the
    operator prints ten, each thousands of lines) cost about a minute per test process."""
    bin_dir = cluster_bin_dir()
    texts = [(gateway.crd_dir(bin_dir) / "gateway.networking.k8s.io_httproutes.yaml").read_text(),
             (keda.crd_dir(bin_dir) / "keda.sh_scaledobjects.yaml").read_text()]
    texts += [d for d in keda.operator_crds(bin_dir).split("\n---") if "name: podmonitors.monitoring.coreos.com" in d]
    crds = [d for t in texts for d in yaml.load_all(t, Loader=_PlainEquals) if d]
    return crd_schemas(crds)


class _PlainEquals(yaml.SafeLoader):
    """YAML 1.1 reads a bare `=` as the `value` tag, which PyYAML cannot build; the CRDs mean the
    string (label-matcher operators), as the API server's YAML 1.2 reader does."""


_PlainEquals.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


@pytest.mark.parametrize("stack", sorted(PLANS))
@pytest.mark.parametrize("version", VERSIONS)
def test_render_validates_strictly(stack: str, version: str) -> None:
    errors = []
    for obj in rendered(PLANS[stack]()):
        if (obj["apiVersion"], obj["kind"]) in CASE_CRDS:
            if err := custom_resource_errors(obj, case_crd_schemas()):
                errors.append(err)
            continue
        if obj["kind"] == "PodGroup":
            assert obj["apiVersion"] == "scheduling.run.ai/v2alpha2"
            assert set(obj["spec"]) <= PODGROUP_SPEC_FIELDS, obj["spec"]
            assert isinstance(obj["spec"]["minMember"], int) and obj["spec"]["queue"]
            continue
        if obj["kind"] == "ComputeDomain":  # NVIDIA's CRD: checked against tools/sim/crds' schema of it
            assert compute_domain_errors(obj) == []
            continue
        err = schema_errors(obj, version)
        if err:
            errors.append(err)
    assert errors == []


def test_v1beta2_claims_validate_for_kubernetes_1_33_style_clusters() -> None:
    values = copy.deepcopy(sf.plan(sf.AWS).values)
    values["resourceApi"] = "resource.k8s.io/v1beta2"
    objs = render("gpu-smoke-test", values, release="gpu-smoke-test", namespace="gpu-smoke-test")
    rct = [o for o in objs if o["kind"] == "ResourceClaimTemplate"]
    assert rct and all(o["apiVersion"] == "resource.k8s.io/v1beta2" for o in rct)
    assert [schema_errors(o, "1.34.0") for o in rct] == [None]


@pytest.mark.parametrize("stack", sorted(PLANS))
def test_lint_is_clean(stack: str) -> None:
    import helm_python

    report = helm_python.lint(chart_dir("gpu-smoke-test"), PLANS[stack]().values, strict=True)
    serious = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and serious == []


@pytest.mark.parametrize("stack", sorted(PLANS))
def test_rendered_names_are_what_the_verifier_expects(stack: str) -> None:
    plan = PLANS[stack]()
    objs = rendered(plan)
    jobs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Job"}
    assert set(jobs) == {c.job for c in plan.expectations.cases}
    for case in plan.expectations.cases:
        job = jobs[case.job]
        assert job["spec"]["suspend"] is True  # the runner resumes each case itself
        assert job["spec"]["parallelism"] == job["spec"]["completions"] == case.pods
        assert job["spec"]["backoffLimit"] == 0
        tpl = job["spec"]["template"]
        assert tpl["metadata"]["labels"]["ck8s-gpu.io/smoke-run"] == plan.run_id
        assert tpl["metadata"]["labels"]["ck8s-gpu.io/smoke-case"] == case.case
        assert [c["name"] for c in tpl["spec"]["containers"]] == list(case.containers)
        if case.pod_group:
            assert tpl["metadata"]["annotations"]["pod-group-name"] == case.pod_group
        if case.claim:
            assert tpl["spec"]["resourceClaims"][0]["resourceClaimName"] == case.claim
            assert case.claim in {o["metadata"]["name"] for o in objs if o["kind"] == "ResourceClaim"}
    groups = [o for o in objs if o["kind"] == "PodGroup"]
    assert [g["metadata"]["name"] for g in groups] == [c.pod_group for c in plan.expectations.cases if c.pod_group]


def test_shared_named_pods_name_one_claim_object_with_the_queue_label_kai_needs() -> None:
    plan = sf.plan(sf.AWS_MPS)
    objs = rendered(plan)
    case = next(c for c in plan.expectations.cases if c.case == "shared-named")
    claims = [o for o in objs if o["kind"] == "ResourceClaim"]
    assert [c["metadata"]["name"] for c in claims] == [case.claim]
    # KAI v0.17.0 validateSharedGpuClaimQueueLabel: a shared GPU claim without the pod's queue label blocks it.
    assert claims[0]["metadata"]["labels"]["kai.scheduler/queue"] == "smoke-test"
    job = next(o for o in objs if o["kind"] == "Job" and o["metadata"]["name"] == case.job)
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 2
    assert job["spec"]["template"]["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": case.claim}]
    default = rendered(sf.plan({**sf.AWS_MPS, "smokeTest": {**sf.AWS_MPS["smokeTest"], "scheduler": "default"}}))
    assert "kai.scheduler/queue" not in next(o for o in default if o["kind"] == "ResourceClaim")["metadata"]["labels"]


def test_the_gpu_config_goes_on_the_shared_claims_only() -> None:
    """NVIDIA's gpu-test5 shape: spec.devices.config[{requests, opaque{driver, parameters: GpuConfig}}]."""
    objs = rendered(sf.plan(sf.AWS_ALL_CASES))

    def devices(kind: str, part: str) -> dict[str, Any]:
        obj = next(o for o in objs if o["kind"] == kind and f"-{part}-" in o["metadata"]["name"])
        return obj["spec"]["spec"]["devices"] if kind == "ResourceClaimTemplate" else obj["spec"]["devices"]

    want = [{"requests": ["gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}}}]
    assert devices("ResourceClaimTemplate", "shared")["config"] == want
    assert devices("ResourceClaim", "shared-named")["config"] == want
    assert "config" not in devices("ResourceClaimTemplate", "gpu") and "config" not in devices(
        "ResourceClaimTemplate", "mig")
    # The shared claims ask for the same device as the whole-GPU ones (selectors included).
    assert devices("ResourceClaimTemplate", "shared")["requests"] == devices("ResourceClaimTemplate", "gpu")["requests"]


def test_a_mig_only_render_has_no_whole_gpu_objects_and_selects_the_profile() -> None:
    objs = rendered(sf.plan(sf.AWS_MIG_ONLY))
    assert sorted((o["kind"], o["metadata"]["name"].rsplit("-", 1)[0]) for o in objs) == [
        ("ConfigMap", "gpu-smoke-test-probe"), ("Job", "gpu-smoke-test-mig"),
        ("NetworkPolicy", "gpu-smoke-test-deny"), ("ResourceClaimTemplate", "gpu-smoke-test-mig")]
    mig = next(o for o in objs if o["kind"] == "ResourceClaimTemplate")
    # The selector of NVIDIA's gpu-test4, on the `profile` attribute the driver publishes.
    assert mig["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] == [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]


def test_scheduler_and_queue_follow_settings() -> None:
    kai = {o["kind"]: o for o in rendered(sf.plan(sf.AWS))}["Job"]["spec"]["template"]
    assert kai["spec"]["schedulerName"] == "kai-scheduler"
    assert kai["metadata"]["labels"]["kai.scheduler/queue"] == "smoke-test"
    default = {o["kind"]: o for o in rendered(sf.plan(sf.LOCAL))}["Job"]["spec"]["template"]
    assert "schedulerName" not in default["spec"]
    assert "kai.scheduler/queue" not in default["metadata"]["labels"]


def test_selectors_become_escaped_cel() -> None:
    objs = rendered(sf.plan(sf.AWS_ALL_CASES))
    gpu = next(o for o in objs if o["kind"] == "ResourceClaimTemplate" and "-gpu-" in o["metadata"]["name"])
    exprs = [s["cel"]["expression"] for s in gpu["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]]
    assert exprs == [
        "device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA H100.*\\'s \\\\d')",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0",
    ]
    mig = next(o for o in objs if o["kind"] == "ResourceClaimTemplate" and "-mig-" in o["metadata"]["name"])
    assert mig["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "mig.nvidia.com"


def test_image_is_pinned_by_digest_and_registry_is_overridable() -> None:
    from components.tables import pins

    pin = pins.image("smoke-test")
    images = {c["image"] for o in rendered(sf.plan(sf.AWS_ALL_CASES)) if o["kind"] == "Job"
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert images == {f"mirror.internal:5000/dockerhub/library/ubuntu:{pin.tag}@{pin.digest}"}
    images = {c["image"] for o in rendered(sf.plan(sf.AWS)) if o["kind"] == "Job"
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert images == {pin.ref}


def test_pods_meet_the_restricted_pod_security_standard() -> None:
    for obj in rendered(sf.plan(sf.AWS_ALL_CASES)):
        if obj["kind"] != "Job":
            continue
        spec = obj["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        for c in spec["containers"]:
            assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
            assert c["resources"]["claims"] == [{"name": "gpu"}]
        assert {v["name"] for v in spec["volumes"]} == {"probe", "podinfo", "tmp"}


def test_barrier_reads_the_annotation_the_runner_sets() -> None:
    cm = next(o for o in rendered(sf.plan(sf.AWS)) if o["kind"] == "ConfigMap")
    assert f"'^{RELEASE_ANNOTATION}=\"{RELEASE_VALUE}\"$'" in cm["data"]["probe.sh"]


def _values(**changes: Any) -> dict[str, Any]:
    values = copy.deepcopy(sf.plan(sf.AWS).values)
    for dotted, value in changes.items():
        node = values
        *head, last = dotted.split("__")
        for part in head:
            node = node[part]
        node[last] = value
    return values


@pytest.mark.parametrize(("changes", "message"), [
    ({"cases__gang": True, "scheduler__name": "default-scheduler", "scheduler__queue": ""},
     'cases.gang needs scheduler.name kai-scheduler, got "default-scheduler"'),
    ({"cases__gang": True, "gpus": 1}, "cases.gang needs gpus >= 2"),
    ({"scheduler__queue": ""}, "scheduler.queue is required with kai-scheduler"),
    ({"barrier__timeoutSeconds": 1000, "activeDeadlineSeconds": 900},
     "barrier.timeoutSeconds (1000) exceeds activeDeadlineSeconds (900)"),
    ({"runId": ""}, "runId must be 4-12 lowercase letters/digits"),
    ({"image__tag": ""}, "image.repository and image.tag are required"),
    ({"cases__mig": {"enabled": True, "deviceClassName": "", "profile": ""}}, "cases.mig.deviceClassName is required"),
    ({"cases__wholeGpu": False}, "no case is enabled"),
    ({"sharing__gpuSharing": {"strategy": "MPS", "mpsConfig": {}}},
     "sharing.gpuSharing configures the shared cases' claims: it needs cases.sharedClaim or cases.sharedNamedClaim"),
])
def test_fail_guards_reject_impossible_values(changes: dict[str, Any], message: str) -> None:
    import helm_python

    with pytest.raises(helm_python.HelmError) as err:
        render("gpu-smoke-test", _values(**changes), release="gpu-smoke-test", namespace="gpu-smoke-test")
    assert message in str(err.value)


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"gpus": 0}, "gpus"),
    ({"image__digest": "sha256:abc"}, "digest"),
    ({"probe__expect": "cuda"}, "expect"),
    ({"surprise": True}, "surprise"),
    ({"resourceApi": "resource.k8s.io/v1alpha3"}, "resourceApi"),
    ({"cases__mig": {"enabled": True, "deviceClassName": "mig.nvidia.com", "profile": "1g10gb"}}, "profile"),
    ({"cases__sharedNamedClaim": "yes"}, "sharedNamedClaim"),
    ({"sharing__gpuSharing": {"strategy": "SpacePartitioning"}}, "gpuSharing"),
    ({"sharing__gpuSharing": {"strategy": "MPS", "timeSlicingConfig": {"interval": "Long"}}}, "gpuSharing"),
    ({"sharing__gpuSharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {}}}, "gpuSharing"),
    ({"sharing__gpuSharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 101}}},
     "gpuSharing"),
])
def test_schema_rejects_bad_values(changes: dict[str, Any], fragment: str) -> None:
    import helm_python

    with pytest.raises(helm_python.HelmError) as err:
        render("gpu-smoke-test", _values(**changes), release="gpu-smoke-test", namespace="gpu-smoke-test")
    assert fragment in str(err.value)


def test_schema_requires_every_value_the_builder_sets() -> None:
    import json

    schema = json.loads((chart_dir("gpu-smoke-test") / "values.schema.json").read_text())
    assert set(sf.plan(sf.AWS).values) == set(schema["properties"])
    with pytest.raises(kubernetes_validate.ValidationError):  # sanity: the helper itself is strict
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                      "bogus": 1}, "1.34.0", strict=True)


def test_namespace_is_default_deny_as_the_isolation_policy_requires() -> None:
    from components.kube.charts import release_chart_path
    from components.policies.namespaces import smoke_isolation_problem
    from components.smoke.values import CHART

    plan = sf.plan(sf.AWS)
    deny = [o for o in rendered(plan) if o["kind"] == "NetworkPolicy"]
    assert [o["spec"] for o in deny] == [{"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}]
    # The chart input as SmokeTest passes it (components/smoke/component.py).
    props = {"chart": release_chart_path(CHART), "namespace": plan.namespace, "name": plan.release,
             "values": plan.values}
    assert smoke_isolation_problem([("kubernetes:helm.sh/v3:Release", props)], plan.namespace) is None
    off = {**props, "values": {**plan.values, "networkPolicy": {"enabled": False}}}
    assert smoke_isolation_problem([("kubernetes:helm.sh/v3:Release", off)], plan.namespace) is not None
