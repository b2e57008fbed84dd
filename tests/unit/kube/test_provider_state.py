"""The dynamic providers as existing Pulumi states hold them.

Pulumi pickles a dynamic provider (dill, by reference) into every resource's `__provider` input,
and later runs (`up`, `refresh`, `destroy`) load it from the state in the engine's provider process.
The blobs below are what the states written before `components/kube` existed hold: they must keep
loading, under the same module paths, to a provider that works.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from components import k8s_ready, k8s_wait
from tests.unit.platforms.fake_api import FakeApi, node, node_list

REPO = Path(__file__).resolve().parents[3]

# serialize_provider(_ApiReadyProvider()) / serialize_provider(_WaitForProvider()) at commit d5eb456.
OLD_API_READY = "gASVMQAAAAAAAACMFGNvbXBvbmVudHMuazhzX3JlYWR5lIwRX0FwaVJlYWR5UHJvdmlkZXKUk5QpgZQu"
OLD_WAIT_FOR = "gASVLwAAAAAAAACME2NvbXBvbmVudHMuazhzX3dhaXSUjBBfV2FpdEZvclByb3ZpZGVylJOUKYGULg=="

# Run by the engine's provider process: unpickle the blob, then create and diff as the engine would.
CHILD = """
import base64, json, sys
import dill
job = json.loads(sys.stdin.read())
provider = dill.loads(base64.b64decode(job["blob"]))
created = provider.create(job["props"])
again = provider.diff(created.id, created.outs, job["props"]).changes
print(json.dumps({"class": f"{type(provider).__module__}.{type(provider).__qualname__}", "id": created.id,
                  "outs": created.outs, "changes": again}))
"""


def _in_a_fresh_process(blob: str, props: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps({"blob": blob, "props": props}), cwd=REPO,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize(("provider", "blob"), [(k8s_ready._ApiReadyProvider, OLD_API_READY),
                                                (k8s_wait._WaitForProvider, OLD_WAIT_FOR)])
def test_providers_still_pickle_to_what_old_states_hold(provider: type, blob: str) -> None:
    # Same bytes: a state written now equals one written before, and the blob names a class, not code.
    assert serialize_provider(provider()) == blob


def test_an_old_api_ready_state_loads_and_checks_the_api() -> None:
    routes = {"/readyz": [(200, "ok")], "/api/v1/nodes": [(200, node_list(node("cp", True), node("w", False)))]}
    with FakeApi(routes) as api:
        props = {"kubeconfig": api.kubeconfig(), "timeoutSeconds": 30, "minReadyNodes": 1, "trigger": None}
        got = _in_a_fresh_process(OLD_API_READY, props)
    assert got["class"] == "components.k8s_ready._ApiReadyProvider"
    assert got["id"].startswith("apiready-") and got["changes"] is False
    assert got["outs"]["endpoint"] == api.url and got["outs"]["readyNodes"] == 1
    assert api.paths() == ["/readyz", "/api/v1/nodes"]


def test_an_old_wait_for_state_loads_and_waits_for_the_field() -> None:
    routes = {
        "/apis/nvidia.com/v1": [(200, {"resources": [{"name": "clusterpolicies", "kind": "ClusterPolicy",
                                                      "namespaced": False}]})],
        "/apis/nvidia.com/v1/clusterpolicies/cluster-policy": [(200, {"status": {"state": "ready"}})],
    }
    with FakeApi(routes) as api:
        # The inputs as addon_set.py declares them (and existing states hold them).
        props = {"kubeconfig": api.kubeconfig(), "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                 "objectName": "cluster-policy", "namespace": None, "jsonpath": "{.status.state}",
                 "equals": "ready", "timeoutSeconds": 30, "trigger": "v25.10.0"}
        got = _in_a_fresh_process(OLD_WAIT_FOR, props)
    assert got["class"] == "components.k8s_wait._WaitForProvider"
    assert got["id"].startswith("waitfor-") and got["changes"] is False
    assert got["outs"]["observed"] == "ready" and got["outs"]["jsonpath"] == "{.status.state}"
