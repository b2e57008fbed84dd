"""Add-on upgrades under the mock engine and as pure functions: what a pin change touches and in
which order, the release options that make a failed upgrade stop and roll back, chart mirrors,
and what every pinned chart does with its CRDs (docs/addons.md, Upgrades)."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons.addon_set import ENGINE_GRACE_SECONDS, AddonSet, release_source, set_fingerprint
from components.addons.catalog import ADDONS, BY_NAME
from components.addons.crds import BY_CHART, CRD_HANDLING
from components.addons.gpu_operator import operator_digest
from components.addons.graph import AddonGraphError, install_graph
from components.kube.charts import chart_version
from components.plan.mockengine import PlanRun, run_program
from components.policies.facts import StackFacts
from components.policies.helm import HELM_RELEASE_PINNED, RELEASE
from components.policies.offline import resource_args
from components.settings import Settings
from components.settings.load import SettingsError
from components.smoke.component import SmokeTest
from components.tables import pins
from tests.unit.addons.helpers import StandInCluster, ancestors, by_name, context, final_values, settings

WAIT = "pulumi-python:dynamic/ck8s-gpu:ClusterPolicyReady"
SMOKE_RUN = "pulumi-python:dynamic/ck8s-gpu:SmokeRun"
GATE = "gpu-gpu-operator-cluster-policy-ready"
OPERATOR_B = "v26.3.3"


def run(s: Settings) -> PlanRun:
    """The add-on set and the smoke test, wired as __main__.py wires them."""
    def program() -> None:
        cluster = StandInCluster(s)
        addons = AddonSet("gpu", s, cluster)
        SmokeTest("smoke", s, cluster, depends_on=addons.smoke_dependencies, addons_digest=addons.fingerprint)

    return run_program(program, {}, stack="test")


def changed_keys(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> set[str]:
    """Dotted paths whose values differ (maps compared key by key)."""
    out: set[str] = set()
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            out |= changed_keys(x, y, f"{prefix}{key}.")
        elif x != y:
            out.add(f"{prefix}{key}")
    return out


@pytest.fixture(scope="module")
def pin_a() -> PlanRun:
    return run(settings("aws"))


@pytest.fixture(scope="module")
def pin_b() -> PlanRun:
    return run(settings("aws", gpuStack={"addons": {"gpuOperator": {"version": OPERATOR_B}}}))


def test_an_operator_pin_change_touches_the_operator_its_gate_and_the_smoke_test_only(
    pin_a: PlanRun, pin_b: PlanRun
) -> None:
    a, b = by_name(pin_a), by_name(pin_b)
    assert set(a) == set(b), "a pin change adds or removes nothing"
    changed = {n: changed_keys(a[n].inputs, b[n].inputs) for n in a if a[n].inputs != b[n].inputs}
    assert changed == {
        "gpu-gpu-operator": {"version"},
        GATE: {"trigger"},  # the ClusterPolicy gate waits again for the upgraded operator
        "smoke-chart": {"values.runId"},  # the smoke test runs again, after everything
        "smoke-run": {"spec.runId", "spec.expectations.run_id", "spec.expectations.cases"},
    }, changed
    assert (a["gpu-gpu-operator"].inputs["version"], b["gpu-gpu-operator"].inputs["version"]) == (
        pins.chart("gpu-operator").version, OPERATOR_B)
    assert b[GATE].inputs["trigger"] == operator_digest(OPERATOR_B, b["gpu-gpu-operator"].inputs["values"])
    assert a[GATE].inputs["trigger"] != b[GATE].inputs["trigger"]
    for n in a:  # and no dependency moves
        assert a[n].dependencies == b[n].dependencies, n


def test_the_upgrade_order_is_operator_then_gate_and_the_smoke_test_after_the_gpu_path(pin_b: PlanRun) -> None:
    """Pulumi updates a resource only after what it depends on: the gate after the operator's
    release; the DRA driver beside them (its plugin waits for the driver, docs/adr/0019); the smoke
    run after every release and gate on the GPU path, not after monitoring."""
    res = by_name(pin_b)
    assert res["gpu-gpu-operator"].urn in res[GATE].dependencies
    assert not {"gpu-gpu-operator", GATE} & ancestors(pin_b, "gpu-dra-driver")
    releases = {x.name for x in pin_b.resources if x.type == RELEASE and x.name.startswith("gpu-")}
    off_path = {"gpu-kube-prometheus-stack", "gpu-observability"}
    assert (releases - off_path) | {GATE} <= ancestors(pin_b, "smoke-chart")
    assert not off_path & ancestors(pin_b, "smoke-chart") and off_path <= releases
    assert "smoke-chart" in ancestors(pin_b, "smoke-run")


def test_a_failed_upgrade_rolls_back_and_stops_there(pin_a: PlanRun) -> None:
    """`atomic`: Helm rolls a failed upgrade back to the last deployed revision (and removes a
    failed install); `pulumi up` fails at that release. Pulumi's own timeout covers the upgrade's
    wait plus the rollback's."""
    releases = [x for x in pin_a.resources if x.type == RELEASE and x.name.startswith("gpu-")]
    assert len(releases) == 7
    for x in releases:
        timeout = int(x.inputs["timeout"])
        assert x.inputs["atomic"] is True and x.inputs["cleanupOnFail"] is True, x.name
        assert x.timeouts["create"] == f"{timeout + ENGINE_GRACE_SECONDS}s", x.name
        assert x.timeouts["update"] == f"{2 * timeout + ENGINE_GRACE_SECONDS}s", x.name


def test_the_smoke_run_id_follows_every_pin_and_repository_but_not_the_region() -> None:
    base = settings("aws")
    ctx = {a.name: context(a, base) for a in install_graph(base).order}

    def digest(s: Settings) -> str:
        graph = install_graph(s)
        return set_fingerprint(graph.order, {a.name: release_source(a, context(a, s)) for a in graph.order})

    assert release_source(BY_NAME["gpu-operator"], ctx["gpu-operator"]) == \
        f"https://helm.ngc.nvidia.com/nvidia/gpu-operator@{pins.chart('gpu-operator').version}"
    assert release_source(BY_NAME["kai-queues"], ctx["kai-queues"]) == "charts/kai-queues@local"
    same = digest(base)
    assert digest(settings("aws", region="us-east-2")) == same  # stamped regions run the same test
    assert digest(settings("aws", gpuStack={"addons": {"kaiScheduler": {"version": "v0.16.0"}}})) != same
    # monitoring is off the GPU path: its pin neither re-runs the test nor waits for it (docs/adr/0019)
    assert digest(settings("aws", gpuStack={"addons": {"kubePrometheusStack": {"version": "80.0.0"}}})) == same
    mirror = {"gpuStack": {"addons": {"kaiScheduler": {"repository": "oci://mirror.example.com/kai"}}}}
    assert digest(settings("aws", **mirror)) != same


MIRRORS = {
    "gpuOperator": {"repository": "https://charts.example.com/nvidia/"},
    "draDriver": {"repository": "oci://registry.example.com:5000/mirror", "version": "0.4.0"},
    "observability": {"repository": "http://10.0.0.5:8080/charts"},
}


def test_a_mirror_serves_the_same_chart_at_the_pinned_or_chosen_version() -> None:
    res = by_name(run(settings("aws", gpuStack={"addons": MIRRORS})))
    op = res["gpu-gpu-operator"].inputs
    assert (op["chart"], op["version"], op["repositoryOpts"]) == (
        "gpu-operator", pins.chart("gpu-operator").version, {"repo": "https://charts.example.com/nvidia"})
    dra = res["gpu-dra-driver"].inputs
    assert (dra["chart"], dra["version"]) == ("oci://registry.example.com:5000/mirror/dra-driver-nvidia-gpu", "0.4.0")
    assert "repositoryOpts" not in dra
    # This repository's chart from a mirror: its own name, at its Chart.yaml version.
    obs = res["gpu-observability"].inputs
    assert (obs["chart"], obs["version"], obs["repositoryOpts"]) == (
        "gpu-observability", chart_version("gpu-observability"), {"repo": "http://10.0.0.5:8080/charts"})
    assert res["gpu-kai-queues"].inputs["chart"].endswith("charts/kai-queues")  # no mirror: the path


def test_a_version_for_a_chart_of_this_repository_needs_a_mirror() -> None:
    s = settings("aws", gpuStack={"addons": {"observability": {"version": "0.2.0"}}})
    with pytest.raises(AddonGraphError, match=r"observability: version 0\.2\.0 needs a repository that serves it "
                                              r"\(gpuStack\.addons\.observability\.repository\)"):
        install_graph(s)
    ok = settings("aws", gpuStack={"addons": {"observability": {"version": "0.2.0",
                                                                 "repository": "https://charts.example.com"}}})
    assert context(BY_NAME["observability"], ok).version == "0.2.0"


@pytest.mark.parametrize(("url", "reason"), [
    ("ftp://charts.example.com", "must start with https://, http:// or oci://"),
    ("charts.example.com/nvidia", "must start with https://, http:// or oci://"),
    ("https://user:secret@charts.example.com", "stored in clear in the Pulumi state"),
    ("https://charts.example.com/?token=x", "has a query or fragment"),
    ("oci://", "names no host"),
    ("https://charts.example.com:port", "is not a URL"),
])
def test_bad_mirrors_are_refused_with_their_path(url: str, reason: str) -> None:
    with pytest.raises(SettingsError) as err:
        settings("aws", gpuStack={"addons": {"velero": {"repository": url}}})
    assert "settings.gpuStack.addons.velero.repository" in str(err.value) and reason in str(err.value)


def test_the_policy_pack_allows_the_stacks_own_mirrors() -> None:
    s = settings("aws", gpuStack={"addons": MIRRORS})
    props = run(s).resources
    facts = StackFacts.from_settings(s)
    for name in ("gpu-gpu-operator", "gpu-dra-driver", "gpu-observability"):
        release = next(x for x in props if x.name == name)
        found: list[str] = []
        for stack_facts in (facts, None):  # with the stack's settings, and without them
            HELM_RELEASE_PINNED.validate(resource_args(RELEASE, release.inputs, facts=stack_facts),
                                         lambda m, _u=None, f=found: f.append(m))
        assert len(found) == 1 and "is not allowed" in found[0], (name, found)


def test_every_pinned_chart_says_what_happens_to_its_crds() -> None:
    assert set(BY_CHART) == set(pins.CHARTS), "a chart without a CRD row (components/addons/crds.py)"
    assert len(BY_CHART) == len(CRD_HANDLING)
    for h in CRD_HANDLING:
        assert h.source and h.mechanism and h.ours, h.chart
        assert not (h.switch and h.manual), f"{h.chart}: a switch we turn on needs no manual step"


def test_the_values_turn_on_every_crd_upgrade_mechanism_the_table_says_they_do() -> None:
    s = settings("aws", backup={"region": "us-west-2"}, gpuStack={"addons": {"velero": {"values": {
        "credentials": {"existingSecret": "mine"}}}}})
    by_pin = {a.chart_pin: a for a in ADDONS if a.chart_pin}
    for h in CRD_HANDLING:
        addon = by_pin.get(h.chart)
        if addon is None or h.switch is None:
            continue
        value: Any = final_values(addon, s)
        for key in h.switch.split("."):
            value = value[key]
        assert value is True, (h.chart, h.switch)
    assert final_values(BY_NAME["gpu-operator"], s)["operator"] == {"upgradeCRD": True}
    # Left off, as the table says: no pinned image to run them with.
    assert "crds" not in final_values(BY_NAME["kube-prometheus-stack"], s)
    assert final_values(BY_NAME["velero"], s)["upgradeCRDs"] is False


def test_chart_version_reads_chart_yaml() -> None:
    assert chart_version("kai-queues") == "0.1.0" and chart_version("gpu-observability") == "0.1.0"
