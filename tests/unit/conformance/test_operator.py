"""robust_controller on a fake API (components/conformance/operator.py): passes where KubeRay's pods run,
its webhook refuses what it refuses and a RayCluster is reconciled; fails naming the broken part."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.conformance import operator as op
from components.conformance.common import Context
from components.smoke.gateway import Answer
from tests.unit.smoke.fake_cluster import FakeClock

RAY = "/apis/ray.io/v1"
CLUSTERS = f"{RAY}/namespaces/conf/rayclusters"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
# As the API server relays it: the webhook quotes the whole worker group before its verdict.
UNIQUE = ('admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "robust-controller-twins" is '
          'invalid: spec.workerGroupSpecs[1]: Invalid value: {"groupName":"twin","template":' + "{...}" * 200
          + '}: worker group names must be unique')
DOWN = ('Internal error occurred: failed calling webhook "vraycluster.kb.io": failed to call webhook: Post '
        '"https://kuberay-webhook.kuberay.svc:443/validate-ray-io-v1-raycluster?timeout=10s": connection refused')


def status(code: int, message: str) -> Answer:
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code})
    return Answer(code, body, message)


class FakeRay:
    """The Gateway calls robust_controller makes, and a KubeRay that reconciles on the second look."""

    def __init__(self) -> None:
        self.served = True
        self.operator_pods: list[dict[str, Any]] = [self.pod("kuberay", "kuberay-operator-5d9", ready=True)]
        self.webhook = True
        self.dry_run: Answer | None = status(422, UNIQUE)  # None: admitted
        self.create_refusal: Answer | None = None
        self.reconciles = True
        self.cluster: dict[str, Any] | None = None
        self.looks = 0
        self.calls: list[str] = []

    @staticmethod
    def pod(ns: str, name: str, *, ready: bool, phase: str = "Running", owner: str = "") -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": ns}
        if owner:
            meta["ownerReferences"] = [{"kind": "RayCluster", "name": "robust-controller", "uid": owner,
                                        "controller": True}]
        return {"metadata": meta, "status": {"phase": phase, "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "reason": "ContainersNotReady"}]}}

    def request(self, method: str, api_path: str, *, body: Any = None, **_: Any) -> Answer:
        self.calls.append(f"{method} {api_path}")
        if method == "GET" and api_path == RAY:
            return Answer(200, json.dumps({"resources": [{"kind": "RayCluster"}, {"kind": "RayJob"}]})) \
                if self.served else status(404, "the server could not find the requested resource")
        if method == "GET" and api_path == WEBHOOKS:
            hooks = [{"metadata": {"name": "kuberay-validating-webhook"}, "webhooks": [
                {"name": "vraycluster.kb.io", "failurePolicy": "Fail",
                 "clientConfig": {"service": {"name": "kuberay-webhook", "namespace": "kuberay"}},
                 "rules": [{"apiGroups": ["ray.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                            "resources": ["rayclusters"]}]}]}]
            return Answer(200, json.dumps({"items": hooks if self.webhook else []}))
        if method == "GET" and api_path.startswith("/apis/admissionregistration.k8s.io/"):
            return Answer(200, json.dumps({"items": []}))
        if method == "POST" and api_path == f"{CLUSTERS}?dryRun=All":
            assert [g["groupName"] for g in body["spec"]["workerGroupSpecs"]] == ["twin", "twin"]
            return self.dry_run or Answer(201, json.dumps(body))
        if method == "POST" and api_path == CLUSTERS:
            if self.create_refusal:
                return self.create_refusal
            self.cluster = {**body, "metadata": {**body["metadata"], "uid": "u-1"}}
            return Answer(201, json.dumps(self.cluster))
        if method == "GET" and api_path == f"{CLUSTERS}/robust-controller" and self.cluster:
            self.looks += 1
            ready = self.reconciles and self.looks >= 2
            got = {**self.cluster, "status": {"state": "ready"} if ready else {}}
            if ready:
                got["status"]["conditions"] = [{"type": "RayClusterProvisioned", "status": "True"},
                                               {"type": "HeadPodReady", "status": "True"}]
            return Answer(200, json.dumps(got))
        if method == "DELETE" and api_path == f"{CLUSTERS}/robust-controller":
            self.cluster = None
            return Answer(200, "{}")
        return status(404, "not found")

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[dict[str, Any]], str]:
        assert kind == "Pod"
        if label_selector == "app.kubernetes.io/name=kuberay-operator":
            assert namespace is None  # the operator may live in any namespace
            return self.operator_pods, "1"
        if label_selector == "ray.io/cluster=robust-controller,ray.io/node-type=head" and self.reconciles:
            return [self.pod("conf", "robust-controller-head-x", ready=self.looks >= 2, owner="u-1")], "1"
        return [], "1"

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        if kind == "Service" and name == "robust-controller-head-svc" and self.reconciles and self.cluster:
            return {"metadata": {"name": name, "ownerReferences": [
                {"kind": "RayCluster", "name": "robust-controller", "uid": "u-1", "controller": True}]}}
        return None




@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    c = FakeClock()  # time.monotonic and time.sleep: a second passes without being waited
    monkeypatch.setattr(op, "time", c)
    return c


def run(api: FakeRay, timeout: float = 3.0) -> Any:
    return op.robust_controller(Context(api, "probe:1", "conf", timeout, lambda _m: None))  # type: ignore[arg-type]


def test_no_ray_api_is_a_skipped_not_implemented() -> None:
    api = FakeRay()
    api.served = False
    r = run(api)
    assert (r.id, r.status, r.outcome) == ("robust_controller", "Not Implemented", "skipped")
    assert "gpuStack.addons.kuberayOperator" in r.notes
    assert api.calls == [f"GET {RAY}"]  # nothing created


def test_reconciled_passes_and_names_what_was_proven() -> None:
    api = FakeRay()
    r = run(api)
    assert (r.status, r.outcome) == ("Implemented", "passed"), r.notes
    for said in ("kuberay/kuberay-operator-5d9 Running and Ready", "1 admission webhook(s) reach ray.io",
                 "the webhook vraycluster.kb.io refused a dry-run RayCluster",
                 "RayCluster robust-controller reconciled in"):
        assert said in r.notes, r.notes
    assert api.cluster is None and f"DELETE {CLUSTERS}/robust-controller" in api.calls  # deleted again
    # the head keeps its own command and probes: no Ray in the image is needed
    created = json.loads(json.dumps(op.raycluster(Context(api, "probe:1", "conf", 1, print), "x")))  # type: ignore[arg-type]
    assert created["metadata"]["annotations"] == {"ray.io/overwrite-container-cmd": "true"}
    head = created["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["tolerations"] == [{"operator": "Exists"}] and head["containers"][0]["readinessProbe"]


def test_operator_outside_the_cluster_and_no_webhook_still_passes_on_the_reconcile() -> None:
    api = FakeRay()
    api.operator_pods, api.webhook, api.dry_run = [], False, None
    r = run(api)
    assert (r.status, r.outcome) == ("Implemented", "passed"), r.notes
    assert "no operator pod in the cluster" in r.notes and "no admission webhook reaches ray.io" in r.notes


def test_as_installed_no_webhook_and_the_admission_policy_refusing_passes() -> None:
    """The kuberay-operator 1.5.2 chart serves no webhook; the kuberay-admission add-on's policy refuses instead."""
    api = FakeRay()
    api.webhook = False
    api.dry_run = status(422, "ValidatingAdmissionPolicy 'kuberay-raycluster' with binding 'kuberay-raycluster' "
                              "denied request: spec.workerGroupSpecs: worker group names must be unique")
    r = run(api)
    assert (r.status, r.outcome) == ("Implemented", "passed"), r.notes
    assert "no admission webhook reaches ray.io" in r.notes
    assert "a ValidatingAdmissionPolicy refused a dry-run RayCluster with two worker groups named alike;" in r.notes


def test_never_reconciled_fails_with_what_was_seen() -> None:
    api = FakeRay()
    api.reconciles = False
    r = run(api, timeout=5.0)
    assert (r.status, r.outcome) == ("Not Implemented", "failed")
    assert "the operator did not reconcile RayCluster robust-controller in 5 s" in r.notes, r.notes
    for said in ("no head pod owned by it", "state unset", "does it watch namespace conf"):
        assert said in r.notes, r.notes
    assert api.cluster is None  # deleted on the failure too


def test_a_webhook_admitting_the_invalid_object_fails() -> None:
    api = FakeRay()
    api.dry_run = None
    r = run(api)
    assert (r.status, r.outcome) == ("Not Implemented", "failed")
    assert "the webhook admitted what it refuses" in r.notes and "vraycluster.kb.io" in r.notes
    assert f"POST {CLUSTERS}" not in api.calls  # nothing real created


def test_a_webhook_that_is_down_fails_naming_it() -> None:
    api = FakeRay()
    api.dry_run = api.create_refusal = status(500, DOWN)
    r = run(api)
    assert (r.status, r.outcome) == ("Not Implemented", "failed")
    assert "not operational" in r.notes and 'failed calling webhook "vraycluster.kb.io"' in r.notes
    # no validating webhook of ray.io to ask on the dry run, but one refuses the create: still failed
    api = FakeRay()
    api.webhook, api.dry_run, api.create_refusal = False, None, status(500, DOWN)
    r = run(api)
    assert (r.status, r.outcome) == ("Not Implemented", "failed")
    assert "the create of RayCluster robust-controller got Internal error occurred: failed calling webhook" in r.notes


def test_an_operator_pod_not_ready_fails_naming_it_and_leftovers_do_not() -> None:
    api = FakeRay()
    api.operator_pods.append(FakeRay.pod("kuberay", "kuberay-operator-old", ready=False, phase="Failed"))
    assert run(api).outcome == "passed"  # an evicted pod of an older ReplicaSet
    api.operator_pods[0] = FakeRay.pod("kuberay", "kuberay-operator-5d9", ready=False)
    api.operator_pods[0]["status"]["containerStatuses"] = [
        {"name": "kuberay-operator", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]
    r = run(api)
    assert (r.status, r.outcome) == ("Not Implemented", "failed")
    assert "kuberay/kuberay-operator-5d9 is Running, kuberay-operator CrashLoopBackOff" in r.notes, r.notes
