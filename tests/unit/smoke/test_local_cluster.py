"""`ck8s-gpu smoke` against a real control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler v1.34) with KWOK GPU nodes and published ResourceSlices: the real scheduler
allocates the claims, the real Job and resource-claim controllers run, KWOK finishes the pods.

Needs the binaries built by `bash tools/build.sh`; skips naming what is missing, unless
CK8S_GPU_REQUIRE_TOOLS=1 (CI), where it fails instead.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cli import main as cli_main
from components.cli import smoke as cli
from tests.helpers.tools import load_tool, skip_or_fail
from tests.unit.smoke import settings_fixtures as sf

pytestmark = pytest.mark.integration
GPUS_PER_NODE = 4  # g6.12xlarge


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    lc = load_tool("localcluster")
    bin_dir = lc.tools_bin_dir()
    missing = lc.missing_binaries(bin_dir)
    if missing:
        msg = f"tools not built: missing {', '.join(missing)} in {bin_dir}; build them with `bash tools/build.sh`"
        skip_or_fail(msg)
    c = lc.LocalCluster(tmp_path_factory.mktemp("smoke-lc"), nodes=2, bin_dir=bin_dir, instance_type="g6.12xlarge")
    with c:
        yield c


def publish(cluster: Any, gpus: dict[str, int]) -> None:
    load_tool("dra_publisher").publish(str(cluster.kubeconfig), gpus, kubectl=str(cluster.bin_dir / "kubectl"))


def smoke(cluster: Any, tmp: Path, *argv: str, **run_kw: Any) -> tuple[int, str, dict[str, Any]]:
    stack = tmp / "Pulumi.local.yaml"
    stack.write_text(yaml.safe_dump({"config": {"ck8s-gpu:settings": sf.LOCAL}}))
    report = tmp / "report.json"
    out, err = io.StringIO(), io.StringIO()
    args = cli_main.build_parser().parse_args(["smoke", "--kubeconfig", str(cluster.kubeconfig), "--stack",
                                               str(stack), "--report", str(report), *argv])
    code = cli.execute(args, out=out, err=err, **run_kw)
    doc = json.loads(report.read_text()) if report.exists() else {}
    return code, out.getvalue() + err.getvalue(), doc


def checks(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {t["name"]: (t["status"], t["message"]) for t in doc["results"]["tests"]}


def test_real_scheduler_allocates_distinct_gpus_and_the_run_cleans_up(cluster: Any, tmp_path: Path) -> None:
    publish(cluster, {n: GPUS_PER_NODE for n in cluster.node_names})
    code, text, doc = smoke(cluster, tmp_path)
    assert code == 0, text
    got = checks(doc)
    assert got["resource-slices"][0] == "passed" and f"{cluster.node_names[0]}: 4 GPU(s)" in got["resource-slices"][1]
    assert got["claims-allocated"][0] == "passed"
    assert got["scheduler"] == ("passed", "2 pod(s) bound by default-scheduler")
    assert got["claim-node"][0] == "passed"
    assert got["distinct-gpus"][0] == "passed" and "per the claim history" in got["distinct-gpus"][1]
    assert got["container-device"] == ("skipped", "no kubelet on simulated nodes")
    assert got["jobs-complete"][0] == "passed"
    leftover = cluster.kubectl("get", "jobs,configmaps,resourceclaimtemplates", "-A", "-l",
                               f"ck8s-gpu.io/smoke-run={doc['results']['extra']['runId']}", "-o", "name")
    assert leftover.strip() == ""


def test_a_node_advertising_fewer_gpus_fails_the_slices_hop(cluster: Any, tmp_path: Path) -> None:
    short = cluster.node_names[1]
    publish(cluster, {cluster.node_names[0]: GPUS_PER_NODE, short: 1})
    try:
        code, text, doc = smoke(cluster, tmp_path, "--timeout", "120")
    finally:
        publish(cluster, {n: GPUS_PER_NODE for n in cluster.node_names})
    assert code == 1, text
    status, message = checks(doc)["resource-slices"]
    assert status == "failed"
    assert f"node {short} advertises 1 GPU(s), expected 4 (pool gpu, g6.12xlarge)" in message


# The pods can never start, so the run waits out its whole budget. The settings allow 60 s at least;
# the scheduler reports within a fraction of a second, so the runner gets a few seconds instead.
MISSING_CLASS_BUDGET_SECONDS = 3.0


def test_missing_device_class_fails_and_names_the_scheduler_reason(cluster: Any, tmp_path: Path) -> None:
    publish(cluster, {n: GPUS_PER_NODE for n in cluster.node_names})
    code, text, doc = smoke(cluster, tmp_path, "--device-class", "gpu.example.com",
                            timeout_seconds=MISSING_CLASS_BUDGET_SECONDS, poll_seconds=0.2)
    assert code == 1, text
    # It gave up at its budget: the pods never started, the Job timed out, and it still collected and verified.
    assert "gave up waiting for" in text and "pods to start" in text, text
    [phase] = doc["results"]["extra"]["phases"]
    assert phase["state"] == "timeout" and phase["seconds"] >= MISSING_CLASS_BUDGET_SECONDS - 0.5, phase
    got = checks(doc)
    assert got["device-class"] == ("failed", "DeviceClass gpu.example.com does not exist (is the DRA driver "
                                             "installed with GPU resources enabled?)")
    assert got["claims-allocated"][0] == "failed"
    events = doc["results"]["extra"]["diagnostics"]["events"]
    assert any(e["reason"] == "FailedScheduling" for e in events), events
