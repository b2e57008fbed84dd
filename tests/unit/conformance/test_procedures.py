"""Each conformance procedure on a fake API: it passes on what proves its requirement and fails,
naming what, when a prerequisite is broken (components/conformance/procedures.py); the command
writes the evidence, cleans up, and exits by its MUST rows."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cli import conformance as cli
from components.conformance import procedures as pr
from components.conformance.common import Context
from components.smoke.gateway import Answer

GPU_ATTRS = {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"},
             "driverVersion": {"version": "580.95.5"}, "cudaDriverVersion": {"version": "13.0.0"}}


def device(name: str, uuid: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {**GPU_ATTRS, "uuid": {"string": uuid}, **extra}}


class FakeApi:
    """Just enough of the smoke Gateway: lists, gets, creates, deletes, logs, raw GETs."""

    def __init__(self) -> None:
        self.slices = [{"spec": {"driver": "gpu.nvidia.com", "nodeName": "n1", "pool": {"name": "n1"},
                                 "devices": [device("gpu-0", "GPU-a"), device("gpu-1", "GPU-b")]}}]
        self.paths: dict[str, Any] = {"/apis/resource.k8s.io/v1": {"resources": [
            {"kind": "ResourceClaim"}, {"kind": "ResourceSlice"}, {"kind": "DeviceClass"}]}}
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.deleted: list[str] = []
        self.logs_by_pod: dict[str, str] = {"dra-support": "GPU 0: H100 (UUID: GPU-b)\n", "no-claim": "done\n"}
        self.metrics = ""
        self.services: list[dict[str, Any]] = []
        self.pod_looks: dict[str, int] = {}

    def server_version(self) -> str:
        return "v1.35.2"

    def request(self, method: str, api_path: str, **_: Any) -> Answer:
        if api_path in self.paths:
            return Answer(200, json.dumps(self.paths[api_path]))
        return Answer(404, '{"kind": "Status", "apiVersion": "v1", "message": "not found"}', "not found")

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[dict[str, Any]], str]:
        if kind == "ResourceSlice":
            return self.slices, "1"
        if kind == "Service":
            return self.services, "1"
        if kind == "EndpointSlice":
            return [{"endpoints": [{"nodeName": "n1", "targetRef": {"kind": "Pod", "name": "exp-n1"}}]}], "1"
        return [], "1"

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.objects[(obj["kind"], obj["metadata"]["name"])] = obj
        return obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        obj = self.objects.get((kind, name))
        if obj is None:
            return None
        if kind == "Pod":
            # Running for its first two looks, then done (what a short container does).
            self.pod_looks[name] = self.pod_looks.get(name, 0) + 1
            return {**obj, "status": {"phase": "Running" if self.pod_looks[name] <= 2 else "Succeeded"}}
        if kind == "ResourceClaim":
            # The claim controller deallocates a claim once its last pod is done (Kubernetes 1.34
            # pkg/controller/resourceclaim/controller.go): the allocation is only seen while it runs.
            if all(n > 2 for n in self.pod_looks.values()) and self.pod_looks:
                return {**obj, "status": {}}
            return {**obj, "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-1"}]}}}}
        return obj

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, **_: Any) -> None:
        self.deleted.append(f"{kind}/{name}")

    def logs(self, namespace: str, pod: str, container: str) -> str:
        return self.logs_by_pod[pod]

    def get_text(self, api_path: str) -> str:
        return self.metrics


def ctx(api: FakeApi) -> Context:
    return Context(api, "probe:1", "conf", 5.0, lambda _m: None)  # type: ignore[arg-type]


def test_dra_support_passes_when_the_pod_sees_the_claims_device_and_fails_otherwise() -> None:
    api = FakeApi()
    r = pr.dra_support(ctx(api))
    assert (r.status, r.outcome) == ("Implemented", "passed") and "GPU-b" in r.notes
    api = FakeApi()
    api.logs_by_pod["dra-support"] = "GPU 0: H100 (UUID: GPU-a)\n"  # another GPU than allocated
    r = pr.dra_support(ctx(api))
    assert (r.status, r.outcome) == ("Not Implemented", "failed") and "GPU-b" in r.notes
    api = FakeApi()
    api.paths.clear()  # no DRA API
    assert pr.dra_support(ctx(api)).notes.endswith("no DRA API")


def test_secure_access_fails_when_a_pod_without_a_claim_reaches_a_gpu() -> None:
    api = FakeApi()
    assert pr.secure_accelerator_access(ctx(api)).outcome == "passed"
    api.logs_by_pod["no-claim"] = "DEVICE /dev/nvidia0\nGPU 0: H100 (UUID: GPU-a)\ndone\n"
    r = pr.secure_accelerator_access(ctx(api))
    assert r.outcome == "failed" and "/dev/nvidia0" in r.notes


def test_driver_versions_must_be_published_by_every_gpu() -> None:
    api = FakeApi()
    assert pr.driver_runtime_management(ctx(api)).status == "Implemented"
    api.slices[0]["spec"]["devices"].append({"name": "gpu-2", "attributes": {"type": {"string": "gpu"}}})
    r = pr.driver_runtime_management(ctx(api))
    assert r.outcome == "failed" and "n1/gpu-2" in r.notes


def test_gpu_sharing_is_implemented_where_mig_instances_are_schedulable() -> None:
    api = FakeApi()
    assert pr.gpu_sharing(ctx(api)).status == "Partially Implemented"
    api.slices[0]["spec"]["devices"].append(device("gpu-0-mig-1g10gb-19-0", "MIG-x", type={"string": "mig"},
                                                   profile={"string": "1g.10gb"}))
    r = pr.gpu_sharing(ctx(api))
    assert (r.status, r.outcome) == ("Implemented", "passed") and "1g.10gb" in r.notes


def test_accelerator_metrics_need_utilization_and_memory_for_every_gpu() -> None:
    api = FakeApi()
    assert pr.accelerator_metrics(ctx(api)).outcome == "failed"  # no exporter Service
    api.services = [{"metadata": {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"},
                     "spec": {"ports": [{"port": 9400, "targetPort": 9400}]}}]
    api.metrics = "".join(f'{m}{{gpu="0",UUID="{u}",hostname="n1"}} 1\n'
                          for m in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED") for u in ("GPU-a", "GPU-b"))
    assert pr.accelerator_metrics(ctx(api)).status == "Implemented"
    api.metrics = api.metrics.replace('DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-b"',
                                      'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-b"')
    r = pr.accelerator_metrics(ctx(api))
    assert r.outcome == "failed" and "memory used series for GPU-b" in r.notes


def run_args(tmp_path: Path, **kw: Any) -> argparse.Namespace:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("apiVersion: v1\n")
    base = {"kubeconfig": kubeconfig, "context": None, "out": tmp_path / "ev", "only": None, "image": "probe:1",
            "timeout": 30, "sign_key": None, "json": True,
            "checklist": None, "stack": None, "prometheus_url": None}
    return argparse.Namespace(**{**base, **kw})


def test_the_command_writes_the_evidence_cleans_up_and_fails_on_a_failed_must(tmp_path: Path) -> None:
    api = FakeApi()
    out, err = io.StringIO(), io.StringIO()
    rc = cli.execute(run_args(tmp_path), connect=lambda *_: api, out=out, err=err)
    doc = json.loads(out.getvalue()[out.getvalue().index("{\n"):])
    assert doc["checklist"] == "1.35"
    assert rc == 1 and doc["failedMust"] == ["accelerator_metrics"], err.getvalue()  # no exporter in the fake
    product = yaml.safe_load((tmp_path / "ev" / "PRODUCT.yaml").read_text())
    assert product["spec"]["accelerators"][0] == {"id": "dra_support", "level": "MUST", "status": "Implemented",
                                                  "evidence": ["junit.xml#dra_support", "logs/dra_support.log"],
                                                  "notes": doc["results"][0]["notes"]}
    # everything created is deleted, the namespace last
    assert api.deleted[-1].startswith("Namespace/ck8s-gpu-conformance-")
    assert {"Pod/dra-support", "ResourceClaim/dra-support", "Pod/no-claim"} <= set(api.deleted)


def test_only_and_bad_arguments(tmp_path: Path) -> None:
    api = FakeApi()
    out, err = io.StringIO(), io.StringIO()
    assert cli.execute(run_args(tmp_path, only="dra_support,gpu_sharing"), connect=lambda *_: api, out=out,
                       err=err) == 0
    assert [r["id"] for r in json.loads(out.getvalue()[out.getvalue().index("{\n"):])["results"]] == [
        "dra_support", "gpu_sharing"]
    err = io.StringIO()
    rc = cli.execute(run_args(tmp_path, only="dra_support,telepathy", timeout=1, sign_key=tmp_path / "none",
                              checklist="1.99"), connect=lambda *_: api, out=io.StringIO(), err=err)
    assert rc == 2
    for said in ("telepathy", "--timeout 1", "--sign-key", "--checklist 1.99"):
        assert said in err.getvalue()


def test_a_signed_run_verifies_and_a_changed_byte_does_not(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    (tmp_path / "pub.pem").write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    cli.execute(run_args(tmp_path, sign_key=tmp_path / "key.pem", only="gpu_sharing"), connect=lambda *_: FakeApi(),
                out=io.StringIO(), err=io.StringIO())
    verify = argparse.Namespace(bundle=tmp_path / "ev", public_key=tmp_path / "pub.pem")
    assert cli.verify(verify, out=io.StringIO(), err=io.StringIO()) == 0
    with (tmp_path / "ev" / "logs" / "gpu_sharing.log").open("a") as f:
        f.write("x")
    err = io.StringIO()
    assert cli.verify(verify, out=io.StringIO(), err=err) == 1 and "gpu_sharing.log: changed" in err.getvalue()


def test_an_unreadable_kubeconfig_is_a_bad_argument_not_a_traceback(tmp_path: Path) -> None:
    err = io.StringIO()
    rc = cli.execute(run_args(tmp_path, kubeconfig=tmp_path / "missing"), connect=lambda *_: FakeApi(),
                     out=io.StringIO(), err=err)
    assert rc == 2 and "--kubeconfig" in err.getvalue() and "Traceback" not in err.getvalue()


def test_accelerator_metrics_judge_units_and_name_opentelemetry_s_equivalents() -> None:
    api = FakeApi()
    api.services = [{"metadata": {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"},
                     "spec": {"ports": [{"port": 9400, "targetPort": 9400}]}}]
    api.metrics = "".join(f'{m}{{gpu="0",UUID="{u}"}} {v}\n' for m, v in (("DCGM_FI_DEV_GPU_UTIL", 42),
                                                                         ("DCGM_FI_DEV_FB_USED", 1024))
                          for u in ("GPU-a", "GPU-b"))
    r = pr.accelerator_metrics(ctx(api))
    assert r.outcome == "passed" and "hw.gpu.utilization (x 1/100)" in r.notes and "hw.gpu.memory.usage" in r.notes
    # a percentage past 100: not a utilization
    api.metrics = api.metrics.replace('UUID="GPU-b"} 42', 'UUID="GPU-b"} 4200')
    r = pr.accelerator_metrics(ctx(api))
    assert r.outcome == "failed" and "DCGM_FI_DEV_GPU_UTIL of GPU-b is 4200, outside [0, 100]" in r.notes, r.notes
    # an exporter speaking OpenTelemetry's names (as its Prometheus translation spells them), GPUs by hw.id
    api.metrics = "".join(f'{m}{{hw_id="{u}",hw_type="gpu"}} {v}\n' for m, v in (
        ("hw_gpu_utilization_ratio", 0.5), ("hw_gpu_memory_usage_bytes", 2**30)) for u in ("GPU-a", "GPU-b"))
    r = pr.accelerator_metrics(ctx(api))
    assert r.outcome == "passed" and "hw_gpu_utilization_ratio" in r.notes, r.notes
    api.metrics = api.metrics.replace("} 0.5", "} 50", 1)  # a percentage where a ratio belongs
    assert pr.accelerator_metrics(ctx(api)).outcome == "failed"


@pytest.mark.parametrize("path", ["/dev/nvidia0", "//dev/./nvidia0/", "/dev/../dev/nvidiactl", "/dev/nvidia-caps",
                                  "/dev", "/dev/", "/", "/run/nvidia/driver", "/run/nvidia", "/dev/dri"])
def test_every_spelling_of_a_gpu_host_path_is_a_bypass(path: str) -> None:
    pod = {"spec": {"volumes": [{"name": "gpu", "hostPath": {"path": path}}]}}
    assert pr.gpu_host_mounts(pod) == [f"gpu ({path})"]


@pytest.mark.parametrize("path", ["/var/lib/kubelet", "/dev/infiniband", "/devices", "/run/nvidia-persistenced.d",
                                  "/opt/nvidia"])
def test_host_paths_that_reach_no_gpu_are_not(path: str) -> None:
    assert pr.gpu_host_mounts({"spec": {"volumes": [{"name": "v", "hostPath": {"path": path}}]}}) == []


def test_a_pod_mounting_a_gpu_by_host_path_outside_the_gpu_stack_fails_secure_access() -> None:
    class WithPods(FakeApi):
        pods: list[dict[str, Any]] = []

        def list(self, api_version: str, kind: str, namespace: str | None = None, **kw: Any
                 ) -> tuple[list[dict[str, Any]], str]:
            return (self.pods, "1") if kind == "Pod" and namespace is None else super().list(api_version, kind,
                                                                                             namespace, **kw)

    mounts = {"volumes": [{"name": "nv", "hostPath": {"path": "/dev/nvidia0"}}], "nodeName": "n1"}
    api = WithPods()
    api.pods = [{"metadata": {"namespace": "gpu-operator", "name": "nvidia-driver"}, "spec": mounts}]
    assert pr.secure_accelerator_access(ctx(api)).outcome == "passed"  # the GPU stack's own
    api.pods.append({"metadata": {"namespace": "team-a", "name": "sneaky"}, "spec": mounts})
    r = pr.secure_accelerator_access(ctx(api))
    assert (r.status, r.outcome) == ("Not Implemented", "failed") and "team-a/sneaky on n1 mounts nv" in r.notes


def test_with_the_stack_a_cut_pool_must_publish_its_layout_s_profiles_on_each_node() -> None:
    from components.settings.model import Settings

    class PoolApi(FakeApi):
        def list(self, api_version: str, kind: str, namespace: str | None = None, **kw: Any
                 ) -> tuple[list[dict[str, Any]], str]:
            if kind == "Node":
                return [{"metadata": {"name": "n1", "labels": {"ck8s-gpu/pool": "mig"}}}], "1"
            return super().list(api_version, kind, namespace, **kw)

    def mig(name: str, profile: str) -> dict[str, Any]:
        return device(name, f"MIG-{name}", type={"string": "mig"}, profile={"string": profile})

    settings = Settings.model_validate({"platform": "existing", "nodePools": [
        {"name": "mig", "instanceType": "p5.4xlarge", "mig": {"devices": {"1g.10gb": 2, "3g.40gb": 1}}}]})
    api = PoolApi()
    api.slices[0]["spec"]["devices"] = [mig("m0", "1g.10gb"), mig("m1", "1g.10gb"), mig("m2", "3g.40gb")]
    c = Context(api, "probe:1", "conf", 5.0, lambda _m: None, settings=settings)  # type: ignore[arg-type]
    assert pr.gpu_sharing(c).outcome == "passed"
    api.slices[0]["spec"]["devices"] = [mig("m0", "1g.10gb"), device("gpu-1", "GPU-b")]  # 3g.40gb not cut
    c = Context(api, "probe:1", "conf", 5.0, lambda _m: None, settings=settings)  # type: ignore[arg-type]
    r = pr.gpu_sharing(c)
    assert (r.status, r.outcome) == ("Not Implemented", "failed"), r
    assert "node n1 of pool mig publishes no 3g.40gb instance" in r.notes and "whole GPUs (gpu-1)" in r.notes
