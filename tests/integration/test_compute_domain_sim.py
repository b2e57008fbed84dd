"""ComputeDomains on the node tier: the simulated NVIDIA compute-domain driver, for real kubelets.

A loopback control plane (tools/localcluster.py) and two real kubelet nodes (tools/nodetier.py)
with ``compute_domains=True``: the tier applies the ComputeDomain CRDs and DeviceClasses, runs
``ck8s-sim-compute-domain controller`` and a ``compute-domain.nvidia.com`` kubelet plugin per node.
A ComputeDomain with numNodes 2 -> its channel ResourceClaimTemplate as NVIDIA's controller makes
it -> a pod on each node claiming from it sees /dev/nvidia-caps-imex-channels/channel0 (a
character device, and nothing else there) -> the domain's status is Ready with both nodes ->
with the `no-imex-channel` fault a pod starts without the channel -> deleting the domain removes
its template, node labels and finalizer.

Needs root, `bash tools/build.sh` and scripts/install-debs.sh (runc, CNI plugins); skips naming
what is missing, fails under CK8S_GPU_REQUIRE_TOOLS=1 (CI).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tools import load_tool, skip_or_fail

# kubelets: real kubelet nodes (tools/nodetier.py), in the lane of their own (scripts/all_tiers.sh)
pytestmark = [pytest.mark.integration, pytest.mark.kubelets]

lc = load_tool("localcluster")
nt = load_tool("nodetier")
cds = load_tool("compute_domain_sim")
dra = load_tool("dra_publisher")

NODES = ("cd-node-0", "cd-node-1")
NS = "default"
# The probe image has bash, env, grep, date and sleep only (tools/probe_image.py): bash's own tests.
LIST_CHANNELS = ('shopt -s nullglob; [ -d /dev/nvidia-caps-imex-channels ] || echo NO-CHANNEL-DIR; '
                 'for f in /dev/nvidia-caps-imex-channels/*; do [ -c "$f" ] && echo "CHAR $f" || echo "OTHER $f"; '
                 'done; '
                 "echo END; trap 'exit 0' TERM; sleep 600 & wait")  # as NVIDIA's demo: the pod and its claim stay


@dataclass
class Env:
    cluster: Any
    tier: Any

    def kubectl(self, *args: str, check: bool = True) -> str:
        return str(self.cluster.kubectl(*args, check=check))

    def get(self, *args: str) -> dict[str, Any]:
        return dict(json.loads(self.kubectl("get", *args, "-o", "json")))


def until(what: str, ok: Callable[[], Any], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = ok()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    bin_dir = lc.tools_bin_dir()
    lacking = nt.missing(bin_dir) + lc.missing_binaries(bin_dir)
    if lacking:
        skip_or_fail("compute-domain node tier cannot run here: " + "; ".join(lacking))
    work = tmp_path_factory.mktemp("cd-tier")
    cluster = lc.LocalCluster(work / "cluster", nodes=1, bin_dir=bin_dir, name=f"ck8s-{uuid.uuid4().hex[:6]}")
    cluster.up()
    tier = None
    try:
        specs = [nt.NodeSpec(n, dra.resource_slice_manifest(n, 1)["spec"]["devices"], compute_domains=True)
                 for n in NODES]
        tier = nt.NodeTier(work / "nodes", Path(cluster.kubeconfig), specs, bin_dir=bin_dir)
        tier.up()
        yield Env(cluster, tier)
    finally:
        try:
            if tier is not None:
                tier.down()
        finally:
            cluster.down()


def channel_pod(name: str, node: str, template: str, image: str) -> dict[str, Any]:
    """NVIDIA's demo/specs/imex/channel-injection.yaml pod, pinned to a node, printing what it sees."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "restartPolicy": "Never",
                     "terminationGracePeriodSeconds": 5,
                     "containers": [{"name": "ctr", "image": image, "imagePullPolicy": "IfNotPresent",
                                     "command": ["bash", "-c", LIST_CHANNELS],
                                     "resources": {"claims": [{"name": "imex-channel"}]}}],
                     "resourceClaims": [{"name": "imex-channel", "resourceClaimTemplateName": template}]}}


def pod_log(e: Env, name: str) -> str:
    """What the running container printed (its claim stays prepared while it sleeps)."""
    def printed() -> str:
        return e.kubectl("logs", name, "-n", NS, check=False) if "END" in e.kubectl(
            "logs", name, "-n", NS, check=False) else ""
    return str(until(f"pod {name}'s output", printed, 180)).replace("END", "")


def delete_pods(e: Env, *names: str) -> None:
    e.kubectl("delete", "pod", "-n", NS, "--wait=true", "--timeout=120s", *names)


def test_pods_on_two_nodes_see_their_imex_channel_and_the_domain_is_ready(env: Env) -> None:
    image = env.tier.probe.reference
    env.cluster.apply([cds.compute_domain("imex-domain", NS, "imex-channel-0", num_nodes=2)])
    cd = env.get("computedomain", "imex-domain", "-n", NS)
    # The controller's template (resourceclaimtemplate.go, workload template).
    rct = until("the channel ResourceClaimTemplate",
                lambda: json.loads(env.kubectl("get", "resourceclaimtemplate", "imex-channel-0", "-n", NS, "-o",
                                               "json", check=False) or "null"))
    assert rct["metadata"]["labels"] == {"resource.nvidia.com/computeDomain": cd["metadata"]["uid"],
                                         "resource.nvidia.com/computeDomainTarget": "Workload"}
    assert rct["metadata"]["finalizers"] == ["resource.nvidia.com/computeDomain"]
    spec = rct["spec"]["spec"]["devices"]
    assert spec["requests"] == [{"name": "channel", "exactly": {
        "deviceClassName": cds.DEFAULT_CHANNEL_CLASS, "allocationMode": "ExactCount", "count": 1}}]
    assert spec["config"] == [{"requests": ["channel"], "opaque": {"driver": cds.DRIVER, "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig",
        "domainID": cd["metadata"]["uid"], "allocationMode": "Single"}}}]
    assert env.get("computedomain", "imex-domain", "-n", NS)["status"]["status"] == "NotReady"

    for i, node in enumerate(NODES):
        env.cluster.apply([channel_pod(f"imex-{i}", node, "imex-channel-0", image)])
    for i, node in enumerate(NODES):
        log = pod_log(env, f"imex-{i}")
        assert log.split() == ["CHAR", cds.CHANNEL_PATH], (node, log)  # a character device, nothing else
        assert env.get("pod", f"imex-{i}", "-n", NS)["spec"]["nodeName"] == node

    def ready() -> dict[str, Any] | None:
        st = env.get("computedomain", "imex-domain", "-n", NS).get("status", {})
        return st if st.get("status") == "Ready" else None
    status = until("the ComputeDomain Ready", ready, 60)
    assert sorted(n["name"] for n in status["nodes"]) == list(NODES)
    assert all(n["status"] == "Ready" and n["cliqueID"] for n in status["nodes"])
    assert sorted(n["index"] for n in status["nodes"]) == [0, 1]
    for node in NODES:
        labels = env.get("node", node)["metadata"]["labels"]
        assert labels.get("resource.nvidia.com/computeDomain") == cd["metadata"]["uid"]
    delete_pods(env, "imex-0", "imex-1")


def test_with_the_no_imex_channel_fault_the_container_lacks_its_channel(env: Env) -> None:
    with env.tier.cd_fault("no-imex-channel"):
        env.cluster.apply([channel_pod("imex-fault", NODES[0], "imex-channel-0", env.tier.probe.reference)])
        log = pod_log(env, "imex-fault")
    assert log.split() == ["NO-CHANNEL-DIR"], log
    delete_pods(env, "imex-fault")


def test_deleting_the_domain_removes_its_template_labels_and_finalizer(env: Env) -> None:
    env.kubectl("delete", "computedomain", "imex-domain", "-n", NS, "--wait=true", "--timeout=60s")
    assert env.kubectl("get", "resourceclaimtemplate", "imex-channel-0", "-n", NS, "--ignore-not-found") == ""
    for node in NODES:
        until(f"{node}'s ComputeDomain label gone", lambda n=node: "resource.nvidia.com/computeDomain"
              not in env.get("node", n)["metadata"]["labels"], 30)
