"""A real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler v1.34)
with KWOK GPU nodes: the real scheduler must allocate DRA claims for `gpu.nvidia.com` devices.

Needs the binaries built by `bash tools/build.sh`. Skips (with the missing binary named) when they
are absent; where skips must not pass (CI) it fails instead (tests/helpers/tools.py).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest

from tests.helpers.tools import load_tool, skip_or_fail

pytestmark = pytest.mark.integration

lc = load_tool("localcluster")
dra = load_tool("dra_publisher")

NS = "dra-e2e"
NODES = 2
GPUS_PER_NODE = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    bin_dir = lc.tools_bin_dir()
    missing = lc.missing_binaries(bin_dir)
    if missing:
        msg = (
            f"tools not built: missing {', '.join(missing)} in {bin_dir}; "
            f"build them once with `bash tools/build.sh` (cold: tens of minutes on 2 cores)"
        )
        skip_or_fail(msg)
    c = lc.LocalCluster(tmp_path_factory.mktemp("localcluster"), nodes=NODES, bin_dir=bin_dir)
    with c:
        print(f"\ncluster start: {c.start_seconds:.1f}s")
        yield c


@pytest.fixture(scope="module")
def gpu_nodes(cluster) -> dict[str, int]:
    """DeviceClass + one ResourceSlice per node, GPUS_PER_NODE devices each."""
    nodes = {n: GPUS_PER_NODE for n in cluster.node_names}
    dra.publish(str(cluster.kubeconfig), nodes, kubectl=str(cluster.bin_dir / "kubectl"))
    slices = cluster.get_json("resourceslices")["items"]
    assert {s["spec"]["nodeName"] for s in slices} == set(nodes)
    assert all(s["spec"]["pool"]["name"] == s["spec"]["nodeName"] for s in slices)
    return nodes


def _claim_template() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": [{
            "name": "gpu",
            "exactly": {"deviceClassName": dra.DEVICE_CLASS, "allocationMode": "ExactCount",
                        "count": 1},
        }]}}},
    }


def _job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "gpu-job", "namespace": NS},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"nvidia.com/gpu.present": "true"},
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                "containers": [{
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04",  # never pulled (KWOK)
                    "command": ["nvidia-smi", "-L"],
                    "resources": {"claims": [{"name": "gpu"}]},
                }],
            }},
        },
    }


def test_scheduler_allocates_dra_gpus_and_job_succeeds(cluster, gpu_nodes):
    t0 = time.monotonic()
    nodes = gpu_nodes

    cluster.kubectl("create", "namespace", NS)
    cluster.create(_claim_template())
    # Claims generated from the template are released and deleted once their pod is done,
    # and KWOK finishes Job pods immediately: record every version of them while it happens.
    with cluster.watch("resourceclaims", NS) as claims_w:
        cluster.create(_job())

        def job_done():
            st = cluster.get_json("job", "gpu-job", "-n", NS).get("status", {})
            if st.get("failed"):
                raise AssertionError(f"job failed: {st}")
            return st.get("succeeded") == 2

        cluster.wait_for("job gpu-job to succeed", job_done, timeout=120)
        time.sleep(1)  # let the watch catch up with the last updates
        claim_versions = claims_w.objects()

    pods = cluster.get_json("pods", "-n", NS, "-l", "job-name=gpu-job")["items"]
    assert len(pods) == 2
    allocated: dict[str, dict[str, Any]] = {}
    for c in claim_versions:
        alloc = c.get("status", {}).get("allocation")
        if alloc:
            allocated[c["metadata"]["name"]] = {"allocation": alloc,
                                                "reservedFor": c["status"].get("reservedFor", [])}

    seen_devices = set()
    for pod in pods:
        name = pod["metadata"]["name"]
        assert pod["status"]["phase"] == "Succeeded", (name, pod["status"])
        node = pod["spec"].get("nodeName")
        assert node in nodes, (name, node)
        statuses = pod["status"].get("resourceClaimStatuses", [])
        assert len(statuses) == 1 and statuses[0]["name"] == "gpu", statuses
        claim = statuses[0]["resourceClaimName"]
        assert claim in allocated, f"claim {claim} of {name} was never seen allocated"
        alloc = allocated[claim]["allocation"]
        results = alloc["devices"]["results"]
        assert len(results) == 1, results
        r = results[0]
        assert r["driver"] == dra.DRIVER
        assert r["pool"] == node, f"{claim} allocated from pool {r['pool']}, pod ran on {node}"
        assert r["device"] in {f"gpu-{i}" for i in range(GPUS_PER_NODE)}
        assert r["request"] == "gpu"
        # The allocation pins the claim to the node it was allocated on.
        assert node in str(alloc.get("nodeSelector")), alloc.get("nodeSelector")
        assert any(ref.get("name") == name for ref in allocated[claim]["reservedFor"]), (
            f"{claim} never reserved for {name}")
        seen_devices.add((r["pool"], r["device"]))
    assert len(seen_devices) == 2, f"two pods got the same device: {seen_devices}"
    print(f"\nDRA job test: {time.monotonic() - t0:.1f}s; devices: {sorted(seen_devices)}")


def test_claim_larger_than_any_node_stays_unschedulable(cluster, gpu_nodes):
    """3 GPUs in one claim: no node advertises 3, so the real scheduler must refuse."""
    ns = "dra-neg"
    cluster.kubectl("create", "namespace", ns)
    tmpl = _claim_template()
    tmpl["metadata"] = {"name": "three-gpus", "namespace": ns}
    tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "too-big", "namespace": ns},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "three-gpus"}],
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }
    cluster.create([tmpl, pod])

    def unschedulable():
        p = cluster.get_json("pod", "too-big", "-n", ns)
        conds = {c["type"]: c for c in p.get("status", {}).get("conditions", [])}
        sched = conds.get("PodScheduled")
        return sched if sched and sched.get("reason") == "Unschedulable" else None

    cond = cluster.wait_for("pod too-big to be reported Unschedulable", unschedulable, timeout=60)
    assert "cannot allocate all claims" in cond.get("message", ""), cond
    p = cluster.get_json("pod", "too-big", "-n", ns)
    assert not p["spec"].get("nodeName")


PULUMI_BINARIES = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")
K8S_PLUGIN_VERSION = "4.34.2"  # what pulumi-kubernetes==4.34.2 asks the engine for

_PROGRAM = '''
import pulumi
import pulumi_kubernetes as k8s

cfg = pulumi.Config()
p = k8s.Provider("local", kubeconfig=cfg.require("kubeconfig"))
opts = pulumi.ResourceOptions(provider=p)
ns = k8s.core.v1.Namespace("ns", metadata={"name": "engine-e2e"}, opts=opts)
tmpl = k8s.resource.v1.ResourceClaimTemplate(
    "one-gpu",
    metadata={"name": "one-gpu", "namespace": ns.metadata["name"]},
    spec={"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}}]}}},
    opts=opts,
)
pulumi.export("namespace", ns.metadata["name"])
pulumi.export("template", tmpl.metadata["name"])
'''


def test_pulumi_engine_up_and_destroy_against_local_cluster(cluster, gpu_nodes, tmp_path):
    """The real engine + our language host + the kubernetes plugin, file backend, no network."""
    import json
    import subprocess

    bin_dir = cluster.bin_dir
    home = bin_dir.parent / "pulumi-home"
    plugin = home / "plugins" / f"resource-kubernetes-v{K8S_PLUGIN_VERSION}"
    missing = [b for b in PULUMI_BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if not plugin.is_dir():
        missing.append(f"plugin {plugin}")
    if missing:
        skip_or_fail(f"Pulumi tools not built: missing {', '.join(missing)}; run `bash tools/build.sh`")

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "Pulumi.yaml").write_text("name: engine-e2e\nruntime: python\n")
    (proj / "__main__.py").write_text(_PROGRAM)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PULUMI_HOME": str(home),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "integration-test",
        "PULUMI_PYTHON_CMD": sys.executable,  # the interpreter running pytest has the SDKs
    }
    (tmp_path / "state").mkdir()

    def pulumi(*args: str) -> str:
        p = subprocess.run([str(bin_dir / "pulumi"), *args, "--non-interactive"], cwd=proj,
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"pulumi {' '.join(args)}:\n{p.stdout}\n{p.stderr}"
        return p.stdout

    t0 = time.monotonic()
    pulumi("stack", "init", "ci")
    pulumi("config", "set", "kubeconfig", str(cluster.kubeconfig))
    pulumi("up", "--yes", "--skip-preview")
    outputs = json.loads(pulumi("stack", "output", "--json"))
    assert outputs == {"namespace": "engine-e2e", "template": "one-gpu"}
    got = cluster.get_json("resourceclaimtemplate", "one-gpu", "-n", "engine-e2e")
    assert got["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == (
        dra.DEVICE_CLASS)
    t_up = time.monotonic() - t0
    pulumi("destroy", "--yes", "--skip-preview")
    assert not cluster.kubectl("get", "namespace", "engine-e2e", "--ignore-not-found").strip() \
        or "Terminating" in cluster.kubectl("get", "namespace", "engine-e2e", "--ignore-not-found")
    print(f"\npulumi engine test: up {t_up:.1f}s, total {time.monotonic() - t0:.1f}s")


# -- CRDs first (components/addons/crds_first.py) against the real API server --------------------

def _crd(served: list[str]) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"size": {"type": "integer"}}}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.demo.ck8s-gpu.test"},
        "spec": {"group": "demo.ck8s-gpu.test", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": v, "served": True, "storage": v == served[-1], "schema": schema}
                              for v in served]},
    }


def test_crds_first_applies_a_new_chart_versions_crds_before_its_release(cluster, tmp_path) -> None:
    """A chart keeping its CRDs in crds/ (Helm never upgrades those): version 0.1.0 brings Widget v1,
    0.2.0 adds v2. The provider pulls each version from a Helm repository and applies its CRDs to
    the real API server; an object made under 0.1.0 is still there under 0.2.0."""
    import yaml

    from components.addons.crds_first import _Provider
    from tests.helpers import chart_repo
    from tests.integration.conftest import inline_kubeconfig

    repo = tmp_path / "repo"
    for version, served in (("0.1.0", ["v1"]), ("0.2.0", ["v1", "v2"])):
        src = tmp_path / f"src-{version}"
        (src / "crds").mkdir(parents=True)
        (src / "templates").mkdir()
        (src / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": "widgets", "version": version}))
        (src / "crds" / "widgets.yaml").write_text(yaml.safe_dump(_crd(served)))
        chart_repo.package(src, repo, version)
    chart_repo.write_index(repo)
    kubeconfig = inline_kubeconfig(cluster.kubeconfig)
    provider = _Provider()
    with chart_repo.serve(repo) as url:
        props = {"kubeconfig": kubeconfig, "repository": url, "chart": "widgets", "version": "0.1.0", "crds": None}
        created = provider.create(props)
        assert created.outs["crds"] == ["widgets.demo.ck8s-gpu.test"]
        cluster.kubectl("create", "namespace", "crds-first")
        cluster.create({"apiVersion": "demo.ck8s-gpu.test/v1", "kind": "Widget",
                        "metadata": {"name": "w", "namespace": "crds-first"}, "spec": {"size": 1}})
        assert not provider.diff("id", props, {**props, "kubeconfig": "rotated"}).changes
        newer = {**props, "version": "0.2.0"}
        assert provider.diff("id", props, newer).changes
        provider.update("id", props, newer)
    crd = cluster.get_json("crd", "widgets.demo.ck8s-gpu.test", "--show-managed-fields")
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v2"]
    assert {f["manager"] for f in crd["metadata"]["managedFields"]} >= {"ck8s-gpu"}
    assert cluster.get_json("widgets.v2.demo.ck8s-gpu.test", "w", "-n", "crds-first")["spec"] == {"size": 1}
    provider.delete("id", newer)  # leaves the CRD: deleting it would delete every Widget
    assert cluster.get_json("crd", "widgets.demo.ck8s-gpu.test")["metadata"]["name"]
