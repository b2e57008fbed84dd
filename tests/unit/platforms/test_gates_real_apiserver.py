"""ApiReady and WaitFor against a REAL kube-apiserver (TLS, client certificates, discovery, CRDs).

Uses the loopback control plane with KWOK GPU nodes (tools/localcluster.py, binaries from
`bash tools/build.sh`). Skips naming the missing binaries, or fails where skips must not pass (CI).
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.k8s_ready import WaitTimeout, check_api_ready
from components.k8s_wait import Target, wait_for
from tests.helpers.tools import load_tool, skip_or_fail

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("quick_backoff")]

def _localcluster() -> Any:
    return load_tool("localcluster")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    lc = _localcluster()
    bin_dir = lc.tools_bin_dir()
    missing = lc.missing_binaries(bin_dir)
    if missing:
        skip_or_fail(f"tools not built: missing {', '.join(missing)} in {bin_dir}; "
                     "build them with `bash tools/build.sh`")
    with lc.LocalCluster(tmp_path_factory.mktemp("gates"), nodes=2, bin_dir=bin_dir, name="ck8s-gates") as c:
        yield c


@pytest.fixture
def backoff_seconds() -> float:
    """quick_backoff's pause (tests/unit/conftest.py): a real API server is polled at 0.2 s, not 0.01 s."""
    return 0.2


def _kubeconfig(cluster: Any) -> str:
    return str(Path(cluster.kubeconfig).read_text())


def test_api_ready_over_tls_with_client_certificates(cluster: Any) -> None:
    outs = check_api_ready(_kubeconfig(cluster), timeout_seconds=60, min_ready_nodes=2)
    assert outs["readyNodes"] == 2
    assert outs["endpoint"].startswith("https://127.0.0.1:")


def test_api_ready_times_out_naming_the_nodes_it_saw(cluster: Any) -> None:
    with pytest.raises(WaitTimeout) as exc:
        check_api_ready(_kubeconfig(cluster), timeout_seconds=2, min_ready_nodes=5)
    assert str(exc.value).endswith("last error: 2/2 nodes Ready; need 5")


def test_api_ready_gives_up_on_a_foreign_ca(cluster: Any) -> None:
    doc = yaml.safe_load(_kubeconfig(cluster))
    other = base64.b64encode(Path(__file__).with_name("foreign-ca.pem").read_bytes()).decode()
    for c in doc["clusters"]:
        c["cluster"].pop("certificate-authority", None)
        c["cluster"]["certificate-authority-data"] = other
    with pytest.raises(WaitTimeout, match=r"gave up after .*TLS verification failed"):
        check_api_ready(yaml.safe_dump(doc), timeout_seconds=120, min_ready_nodes=1)


def test_api_ready_gives_up_on_rejected_credentials(cluster: Any) -> None:
    doc = yaml.safe_load(_kubeconfig(cluster))
    for u in doc["users"]:
        u["user"] = {"token": "not-a-valid-token"}
    with pytest.raises(WaitTimeout, match=r"gave up after .*HTTP 401 Unauthorized"):
        check_api_ready(yaml.safe_dump(doc), timeout_seconds=120, min_ready_nodes=1)


def test_wait_for_a_built_in_object(cluster: Any) -> None:
    target = Target("v1", "Namespace", "kube-system", None, "{.status.phase}", "Active")
    assert wait_for(_kubeconfig(cluster), target, timeout_seconds=30) == "Active"


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.ck8s.io"},
    "spec": {
        "group": "example.ck8s.io",
        "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
        "scope": "Cluster",
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


def _gadget(state: str) -> dict[str, Any]:
    return {"apiVersion": "example.ck8s.io/v1", "kind": "Gadget", "metadata": {"name": "cluster-gadget"},
            "status": {"state": state}}


def test_wait_for_a_custom_resource_whose_crd_arrives_later(cluster: Any) -> None:
    """Like ClusterPolicy: the wait starts before the operator chart has installed its CRD."""
    target = Target("example.ck8s.io/v1", "Gadget", "cluster-gadget", None, "{.status.state}", "ready")
    result: dict[str, Any] = {}

    def waiter() -> None:
        try:
            result["value"] = wait_for(_kubeconfig(cluster), target, timeout_seconds=90)
        except WaitTimeout as exc:
            result["error"] = str(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(1.0)
    cluster.apply(CRD)
    cluster.kubectl("wait", "--for=condition=Established", "crd/gadgets.example.ck8s.io", "--timeout=60s")
    cluster.apply(_gadget("notReady"))
    time.sleep(1.0)
    assert thread.is_alive(), result
    cluster.apply(_gadget("ready"))
    thread.join(timeout=60)
    assert result == {"value": "ready"}


def test_wait_for_timeout_reports_the_last_value_seen(cluster: Any) -> None:
    cluster.apply(CRD)
    cluster.kubectl("wait", "--for=condition=Established", "crd/gadgets.example.ck8s.io", "--timeout=60s")
    cluster.apply({**_gadget("degraded"), "metadata": {"name": "stuck"}})
    target = Target("example.ck8s.io/v1", "Gadget", "stuck", None, "{.status.state}", "ready")
    with pytest.raises(WaitTimeout) as exc:
        wait_for(_kubeconfig(cluster), target, timeout_seconds=2)
    assert str(exc.value).endswith("last observed: {.status.state} is 'degraded'")
