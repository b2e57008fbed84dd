"""The DRA driver's pin 0.4.1 -> 0.5.0 on `local` through the REAL Pulumi engine (docs/adr/0032, 0017).

`local` installs no internet chart, so the add-on comes from a loopback Helm repo serving this
project's stand-in of the driver's chart at both versions (tests/fakes/dra_driver_chart: its CRDs,
DeviceClasses and validation), named as the pin names it (`gpuStack.addons.draDriver.repository`).
up at 0.4.1 (the stack's `version` override) -> up at the pin, 0.5.0 (override removed): the
CrdsFirst step pulls 0.5.0 and applies its crds/ BEFORE Helm upgrades the release (Helm never
upgrades crds/), the CRDs are Established, the release is at 0.5.0, the DeviceClasses are the
chart's, the smoke test passes after each `up` (a GPU-path pin re-runs it) -> a preview changes
nothing. The ResourceSlices are a test publisher's (no kubelet); the DeviceClass is the chart's.
Then the switch to operator-managed DRA by its procedure (docs/components.md): one `up` without
either driver, then operator mode from the GPU Operator chart's stand-in (tests/fakes/
gpu_operator_chart) with the GPUCluster controller's stand-in beside the API server (tests/fakes/
gpu_operator/live.py): GpuClusterReady passes and the smoke test allocates through the operator's
DeviceClass; a one-step switch back fails at preview (DraModeGuard).
Needs `bash tools/build.sh`; skips naming what is missing, fails under CK8S_GPU_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import base64
import gzip
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.addons.dra_driver import NAMESPACE as DRA_NS
from components.plan.measured import Recorder, measure
from components.smoke.report import passed
from components.tables import pins
from tests.fakes import dra_driver_chart
from tests.helpers import chart_repo
from tests.helpers.node_tier import gpu_model
from tests.helpers.tools import copy_project, load_tool
from tests.integration.conftest import ROOT, EngineTools, inline_kubeconfig

pytestmark = pytest.mark.integration

STACK_FILE = ROOT / "stacks" / "Pulumi.local.yaml"
SETTINGS_KEY = "ck8s-gpu:settings"
PASSPHRASE = "dra-driver-upgrade-integration-test"
CHART = "dra-driver-nvidia-gpu"
OLD = "0.4.1"
NEW = pins.chart(CHART).version
RELEASE_URN_NAME = "gpu-stack-dra-driver"
CRDS_URN_NAME = "gpu-stack-dra-driver-crds"
# What the chart writes with allocation dra and computeDomains off (local's default).
DEVICE_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")

lc = load_tool("localcluster")
dra = load_tool("dra_publisher")


def settings_at(repository: str, version: str | None) -> dict[str, Any]:
    """stacks/Pulumi.local.yaml's settings with the DRA driver from the mirror (None: at the pin)."""
    raw = dict(yaml.safe_load(STACK_FILE.read_text())["config"][SETTINGS_KEY])
    own: dict[str, Any] = {"enabled": True, "repository": repository}
    if version is not None:
        own["version"] = version
    gpu_stack = dict(raw.get("gpuStack") or {})
    gpu_stack["addons"] = {**gpu_stack.get("addons", {}), "draDriver": own}
    return {**raw, "gpuStack": gpu_stack}


def write_settings(project: Path, stack: str, settings: dict[str, Any]) -> None:
    """The stack file's settings key only: its other config (the secret kubeconfig) stays."""
    path = project / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(path.read_text()) if path.exists() else {}
    doc.setdefault("config", {})[SETTINGS_KEY] = settings
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def helm_revisions(cluster: Any) -> list[tuple[int, str, str]]:
    """(revision, status, chart version) of the driver's release from Helm's own Secrets."""
    out = []
    for secret in cluster.get_json("secrets", "-n", DRA_NS, "-l", f"owner=helm,name={CHART}")["items"]:
        release = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))
        out.append((release["version"], release["info"]["status"], release["chart"]["metadata"]["version"]))
    return sorted(out)


def established(cluster: Any) -> dict[str, bool]:
    out = {}
    for name in dra_driver_chart.CRD_NAMES:
        conds = (cluster.get_json(f"crd/{name}").get("status") or {}).get("conditions") or []
        out[name] = any(c.get("type") == "Established" and c.get("status") == "True" for c in conds)
    return out


def device_classes(cluster: Any) -> dict[str, str]:
    """name -> the Helm release that owns it (meta.helm.sh/release-name), for the chart's classes."""
    items = cluster.get_json("deviceclasses")["items"]
    return {i["metadata"]["name"]: (i["metadata"].get("annotations") or {}).get("meta.helm.sh/release-name", "")
            for i in items}


def span(spans: dict[str, Any], suffix: str) -> Any:
    found = [s for s in spans.values() if s.urn.endswith(f"::{suffix}")]
    assert len(found) == 1, (suffix, [s.urn for s in spans])
    return found[0]


@dataclass
class Deployed:
    cluster: Any
    stack: Any
    project: Path
    repository: str
    first_run: str
    repository_dir: str


@pytest.fixture(scope="module")
def deployed(engine_tools: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    from pulumi import automation as auto

    work = tmp_path_factory.mktemp("dra-upgrade")
    exits = ExitStack()
    mirror = dra_driver_chart.repository(work / "chart-mirror")
    repository = exits.enter_context(chart_repo.serve(mirror))
    settings = settings_at(repository, OLD)
    pool = settings["nodePools"][0]
    nodes = {f"gpu-node-{i}": pool for i in range(pool["desiredSize"])}
    try:
        cluster = lc.LocalCluster(work / "cluster", nodes=len(nodes), instance_type=pool["instanceType"],
                                  bin_dir=engine_tools.bin_dir, name=f"ck8s-{uuid.uuid4().hex[:6]}")
        cluster.up()
    except BaseException:
        exits.close()
        raise
    stack = None
    try:
        from components.tables.instance_types import gpu_facts
        from components.tables.labels import POOL_LABELS

        count = gpu_facts(pool["instanceType"]).count  # type: ignore[union-attr]
        for node in nodes:
            cluster.kubectl("label", "node", node, f"{POOL_LABELS[0]}={pool['name']}", "--overwrite")
        # Only the slices: the DeviceClass is the chart's (a second writer would make Helm refuse it).
        cluster.apply([dra.resource_slice_manifest(n, count, gpu_model(pool["instanceType"])) for n in nodes])
        project = copy_project(work / "project")
        name = f"dra-up-{uuid.uuid4().hex[:6]}"
        write_settings(project, name, settings)
        opts = engine_tools.workspace(work, project, PASSPHRASE,
                                      env={"CK8S_GPU_SMOKE_REPORT_DIR": str(work / "smoke-reports")})
        stack = auto.create_stack(name, work_dir=str(project), opts=opts)
        stack.set_config("ck8s-gpu:kubeconfig",
                         auto.ConfigValue(inline_kubeconfig(Path(cluster.kubeconfig)), secret=True))
        up = stack.up(on_output=print, color="never")
        report = up.outputs["smokeReport"].value
        assert passed(report), f"up at {OLD}: smoke test did not pass: {report['results']['summary']}"
        yield Deployed(cluster, stack, project, repository, str(report["results"]["extra"]["runId"]), str(mirror))
    finally:
        try:
            if stack is not None:
                try:
                    stack.destroy(on_output=print, color="never")
                finally:
                    stack.workspace.remove_stack(stack.name, force=True)
        finally:
            try:
                cluster.down()
            finally:
                exits.close()


def test_the_old_pin_installs_its_crds_and_device_classes(deployed: Deployed) -> None:
    c = deployed.cluster
    assert helm_revisions(c) == [(1, "deployed", OLD)]
    assert established(c) == dict.fromkeys(dra_driver_chart.CRD_NAMES, True)
    classes = device_classes(c)
    assert {n: classes.get(n) for n in DEVICE_CLASSES} == dict.fromkeys(DEVICE_CLASSES, CHART), classes
    crds = {r["urn"].rsplit("::", 1)[-1]: r for r in deployed.stack.export_stack().deployment["resources"]}
    assert crds[CRDS_URN_NAME]["outputs"]["version"] == OLD
    assert sorted(crds[CRDS_URN_NAME]["outputs"]["crds"]) == sorted(dra_driver_chart.CRD_NAMES)


def test_the_pin_upgrades_crds_first_then_the_release_and_a_preview_is_clean(deployed: Deployed) -> None:
    c = deployed.cluster
    write_settings(deployed.project, deployed.stack.name, settings_at(deployed.repository, None))
    recorder = Recorder()
    t = time.monotonic()
    up = deployed.stack.up(on_output=print, color="never", on_event=recorder)
    print(f"pulumi up ({OLD} -> {NEW}): {time.monotonic() - t:.1f}s")
    report = up.outputs["smokeReport"].value
    assert passed(report), f"up at {NEW}: smoke test did not pass: {report['results']['summary']}"
    # A pin on the GPU path re-runs the smoke test (docs/adr/0017).
    assert report["results"]["extra"]["runId"] != deployed.first_run

    spans = measure(recorder.arrivals).spans
    crds, release = span(spans, CRDS_URN_NAME), span(spans, RELEASE_URN_NAME)
    assert crds.op == "update" and release.op == "update", (crds, release)
    assert crds.end is not None and not crds.failed, crds
    # The CRDs were applied (and Established: CrdsFirst waits for it) before Helm began the upgrade.
    if crds.end_seq is not None and release.start_seq is not None:
        assert crds.end_seq < release.start_seq, (crds, release)
    else:  # an event without a sequence number: by arrival time
        assert release.start >= crds.end, (crds, release)
    state = {r["urn"].rsplit("::", 1)[-1]: r for r in deployed.stack.export_stack().deployment["resources"]}
    assert state[CRDS_URN_NAME]["outputs"]["version"] == NEW
    assert state[RELEASE_URN_NAME]["outputs"]["version"] == NEW

    assert helm_revisions(c) == [(1, "superseded", OLD), (2, "deployed", NEW)]
    assert established(c) == dict.fromkeys(dra_driver_chart.CRD_NAMES, True)
    classes = device_classes(c)
    assert {n: classes.get(n) for n in DEVICE_CLASSES} == dict.fromkeys(DEVICE_CLASSES, CHART), classes
    crd = c.get_json(f"crd/{dra_driver_chart.CRD_NAMES[1]}", "--show-managed-fields")
    managers = {f["manager"] for f in crd["metadata"]["managedFields"]}
    assert "ck8s-gpu" in managers, managers  # applied by CrdsFirst, never by Helm's install

    again = deployed.stack.preview(on_output=print, color="never", diff=True)
    changes = {op: n for op, n in again.change_summary.items() if op != "same" and n}
    assert changes == {}, f"after the upgrade a preview wants changes: {changes}"


# --- the switch to operator-managed DRA (docs/components.md "Switching who manages DRA") ---------

GPU_OPERATOR_NS = "gpu-operator"


def switch_step(repository: str) -> dict[str, Any]:
    """Step 2 of the procedure: both drivers out for one `up` (and the smoke test, which needs one)."""
    raw = settings_at(repository, None)
    raw["gpuStack"] = {**raw["gpuStack"], "draManagedBy": "chart",
                       "addons": {**raw["gpuStack"]["addons"], "draDriver": {"enabled": False},
                                  "gpuOperator": {"enabled": False}}}
    return {**raw, "smokeTest": {**raw.get("smokeTest", {}), "enabled": False}}


def operator_mode(repository: str) -> dict[str, Any]:
    """Step 3: the GPU Operator's GPUCluster runs the DRA driver; its chart from the loopback mirror
    (the stand-in, tests/fakes/gpu_operator_chart). The node image's driver and toolkit are what the
    mode requires (settings refuse it otherwise); on `local` no node boots an image."""
    raw = dict(yaml.safe_load(STACK_FILE.read_text())["config"][SETTINGS_KEY])
    gpu_stack = {**(raw.get("gpuStack") or {}), "draManagedBy": "operator", "driver": "host", "toolkit": "host",
                 "addons": {"gpuOperator": {"enabled": True, "repository": repository}}}
    return {**raw, "gpuStack": gpu_stack}


def test_switching_to_operator_managed_dra_by_the_procedure_passes_the_smoke_test(deployed: Deployed) -> None:
    """Chart mode -> step 2 (no driver) -> operator mode: the stand-in chart's GPUCluster, reconciled by
    the stand-in controller beside the API server (the real DaemonSet controller and KWOK run its
    kubelet plugin's DaemonSet), passes the GpuClusterReady gate, and the smoke test allocates
    through the operator's DeviceClass. Then a one-step switch back is refused at preview."""
    from pulumi import automation as auto

    from tests.fakes import gpu_operator_chart
    from tests.fakes.gpu_operator.clusterpolicy import GPU_PCI_LABELS
    from tests.fakes.gpu_operator.live import LiveGpuCluster

    c, stack = deployed.cluster, deployed.stack
    mirror = Path(deployed.repository_dir)
    gpu_operator_chart.repository(mirror)  # beside the DRA driver's archives; index.yaml holds both
    write_settings(deployed.project, stack.name, switch_step(deployed.repository))
    out = stack.up(on_output=print, color="never")
    assert out.outputs["smokeReport"].value.get("status") == "disabled"
    assert helm_revisions(c) == [], "step 2 leaves no DRA driver release"
    assert "gpu.nvidia.com" not in device_classes(c)

    for node in c.node_names:  # NFD's label on a node with an NVIDIA PCI device (no NFD worker on KWOK)
        c.kubectl("label", "node", node, f"{GPU_PCI_LABELS[0]}=true", "--overwrite")
    write_settings(deployed.project, stack.name, operator_mode(deployed.repository))
    with LiveGpuCluster(c) as controller:
        t = time.monotonic()
        up = stack.up(on_output=print, color="never")
        print(f"pulumi up (operator mode): {time.monotonic() - t:.1f}s")
    report = up.outputs["smokeReport"].value
    assert passed(report), f"operator mode: smoke test did not pass: {report['results']['summary']}"
    assert controller.errors == [], controller.errors
    cluster = c.get_json("gpuclusters.nvidia.com", "gpu-cluster")
    assert cluster["status"]["state"] == "ready"
    gate = [r for r in stack.export_stack().deployment["resources"] if r["type"].endswith(":GpuClusterReady")]
    assert len(gate) == 1 and gate[0]["outputs"]["gpuNodes"] == len(c.node_names), gate
    owners = {d["metadata"]["name"]: [o["kind"] for o in d["metadata"].get("ownerReferences") or []]
              for d in c.get_json("deviceclasses")["items"]}
    assert owners.get("gpu.nvidia.com") == ["GPUCluster"], owners  # the operator's, not a chart's
    releases = c.get_json("secrets", "-n", GPU_OPERATOR_NS, "-l", "owner=helm,name=gpu-operator")["items"]
    assert len(releases) == 1, "the GPU Operator's release, at the pin"

    # A one-step switch back is refused before anything changes (DraModeGuard's check).
    write_settings(deployed.project, stack.name, {**operator_mode(deployed.repository),
                                                  "gpuStack": {**operator_mode(deployed.repository)["gpuStack"],
                                                               "draManagedBy": "chart"}})
    with pytest.raises(auto.CommandError) as refused:
        stack.preview(on_output=print, color="never")
    assert "gpuStack.draManagedBy changes from operator to chart on a deployed stack" in str(refused.value)
    write_settings(deployed.project, stack.name, operator_mode(deployed.repository))
