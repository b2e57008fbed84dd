"""The feature-gate table (components/facts/feature_gates.py): its facts against the Kubernetes sources, what
required() sets per track and feature, the refusals, and the platforms that read it."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.addons.selected import addon_facts
from components.aws import userdata as ud
from components.facts import feature_gates as fg
from components.facts.feature_gate_rules import feature_gate_problems
from components.kind import config as kc
from components.settings.model import Settings
from tests.helpers.cluster_gates import local_cluster_gates
from tests.helpers.tools import load_tool

REPO = Path(__file__).resolve().parents[2]
MOD = Path.home() / "go" / "pkg" / "mod" / "k8s.io"
# The kubernetes releases whose pkg/features the table was read from (module cache).
SOURCES = {32: "v1.32.13", 33: "v1.33.13", 34: "v1.34.4", 35: "v1.35.6"}
SPEC = re.compile(r'\{Version: version\.MustParse\("1\.(\d+)"\), Default: (true|false), '
                  r'PreRelease: featuregate\.(Alpha|Beta|GA)')
# Where each component's code lives in k8s.io/kubernetes.
COMPONENT_DIRS = {
    "kubelet": ("pkg/kubelet",),
    "kube-scheduler": ("pkg/scheduler",),
    "kube-controller-manager": ("pkg/controller", "cmd/kube-controller-manager"),
    "kube-apiserver": ("pkg/registry", "pkg/api", "pkg/apis", "pkg/controlplane", "plugin/pkg"),
}


@functools.cache
def _download(version: str) -> tuple[Path | None, str]:
    """`go mod download` the release into the module cache (the proxy the tools build uses serves
    these versions); (its directory, "") or (None, why not)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    try:
        out = subprocess.run([go, "mod", "download", "-json", f"k8s.io/kubernetes@{version}"], capture_output=True,
                             text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"go mod download k8s.io/kubernetes@{version}: {exc}"
    if out.returncode != 0:
        return None, f"go mod download k8s.io/kubernetes@{version} failed: {(out.stdout + out.stderr).strip()[-300:]}"
    return Path(json.loads(out.stdout)["Dir"]), ""


def kubernetes_source(minor: int) -> Path:
    root = MOD / f"kubernetes@{SOURCES[minor]}"
    if not (root / "pkg" / "features").is_dir():
        fetched, why = _download(SOURCES[minor])
        if fetched is None or not (fetched / "pkg" / "features").is_dir():
            pytest.skip(f"k8s.io/kubernetes {SOURCES[minor]} is not in the Go module cache ({root}) and {why}")
        root = fetched
    return root


def versioned_specs(root: Path, gate: str) -> list[tuple[int, bool, str]]:
    text = "".join(p.read_text() for p in sorted((root / "pkg" / "features").glob("*kube_features.go")))
    block = re.search(rf"^\t{gate}: \{{\n(.*?)^\t\}},", text, flags=re.M | re.S)
    if block is None:
        return []
    return [(int(m), d == "true", stage) for m, d, stage in SPEC.findall(block.group(1))]


def settings(**raw: Any) -> Settings:
    return Settings.model_validate({"platform": "aws", "region": "eu-west-1", **raw})


def track(minor: int, gates: tuple[str, ...] = (), **raw: Any) -> Settings:
    if minor < 34 and not gates:
        gates = ("DynamicResourceAllocation=true",)  # DRA before GA stays the user's opt-in
    return settings(kubernetes={"track": f"1.{minor}-classic", "featureGates": list(gates)}, **raw)


# --- the table against kube_features.go ------------------------------------------------------------


@pytest.mark.parametrize("minor", sorted(SOURCES))
@pytest.mark.parametrize("gate", fg.GATES, ids=lambda g: g.name)
def test_stage_and_default_agree_with_kube_features(gate: fg.Gate, minor: int) -> None:
    specs = [s for s in versioned_specs(kubernetes_source(minor), gate.name) if s[0] <= minor]
    ours = gate.at(minor)
    if not specs:
        assert ours is None, f"{gate.name} does not exist in 1.{minor}"
        return
    _, default, stage = specs[-1]
    assert ours is not None and (ours.default, ours.stage.lower()) == (default, stage.lower()), gate.name


@pytest.mark.parametrize(("gate", "minor"), [(g, m) for m in (33, 34, 35) for g in fg.GATES if g.at(m) is not None],
                         ids=lambda x: x.name if isinstance(x, fg.Gate) else str(x))
def test_the_readers_are_the_components_whose_code_checks_the_gate(gate: fg.Gate, minor: int) -> None:
    root = kubernetes_source(minor)
    readers = set()
    for component, dirs in COMPONENT_DIRS.items():
        out = subprocess.run(["grep", "-rlw", "--include=*.go", f"features.{gate.name}", *dirs], cwd=root,
                             capture_output=True, text=True, check=False).stdout
        if any(not f.endswith("_test.go") for f in out.split()):
            readers.add(component)
    assert readers == set(gate.readers)


def test_the_1_33_and_1_34_informers_watch_v1alpha3_device_taint_rules_when_taints_are_on() -> None:
    for minor in (33, 34):
        src = (kubernetes_source(minor) / "pkg/scheduler/scheduler.go").read_text()
        assert "EnableDeviceTaints" in src and "V1alpha3().DeviceTaintRules()" in src
        assert fg.DRA_DEVICE_TAINTS.apis_at(minor) == (fg.V1ALPHA3,)
    src = (kubernetes_source(35) / "pkg/scheduler/scheduler.go").read_text()
    assert "EnableDeviceTaintRules:   feature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules)" in src
    assert fg.DRA_DEVICE_TAINTS.apis_at(35) == ()


def test_table_facts_per_minor() -> None:
    t, p, d = fg.DRA_DEVICE_TAINTS, fg.DRA_PRIORITIZED_LIST, fg.DYNAMIC_RESOURCE_ALLOCATION
    assert t.at(32) is None and p.at(32) is None
    assert [(t.at(m).stage, t.at(m).default) for m in (33, 34, 35, 36)] == [("alpha", False)] * 3 + [("beta", True)]
    assert [p.at(m).stage for m in (33, 34, 35, 36)] == ["alpha", "beta", "beta", "GA"]
    assert [fg.on_by_default(d, m) for m in (32, 33, 34, 35, 36)] == [False, False, True, True, True]
    assert "kubelet" not in t.readers and "kubelet" not in p.readers and "kubelet" in d.readers


# --- gpu_health_on / required() ----------------------------------------------------------------------


@pytest.mark.parametrize(("minor", "on"), [(33, False), (34, False), (35, False), (36, True)])
def test_gpu_health_derives_on_only_where_device_taints_are_beta(minor: int, on: bool) -> None:
    s = track(minor)
    assert fg.gpu_health_on(s) is on and fg.smoke_gpu_health_on(s) is on
    assert fg.gpu_health_on(track(minor, gpuStack={"gpuHealth": True})) is True
    assert fg.gpu_health_on(track(minor, gpuStack={"allocation": "device-plugin"})) is False
    assert fg.smoke_gpu_health_on(track(minor, gpuStack={"gpuHealth": True}, smokeTest={"gpuHealth": False})) is False


def test_default_stacks_need_nothing_from_1_34_and_the_dra_opt_in_before() -> None:
    for minor in (34, 35, 36):
        got = fg.required(track(minor))
        assert got.gates == {} and got.runtime_config == ()
    got = fg.required(track(32, smokeTest={"enabled": False}))
    assert {c: got.flag(c) for c in fg.COMPONENTS} == dict.fromkeys(fg.COMPONENTS, "DynamicResourceAllocation=true")
    assert got.runtime_config == ("resource.k8s.io/v1beta1",)
    assert fg.required(track(33)).runtime_config == ("resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2")


@pytest.mark.parametrize(("minor", "apis"), [(33, ("resource.k8s.io/v1alpha3", "resource.k8s.io/v1beta1",
                                                    "resource.k8s.io/v1beta2")),
                                             (34, ("resource.k8s.io/v1alpha3",)), (35, ()), (36, ())])
def test_gpu_health_sets_device_taints_on_the_control_plane_only(minor: int, apis: tuple[str, ...]) -> None:
    got = fg.required(track(minor, gpuStack={"gpuHealth": True}))
    wanted = minor < 36
    for c in fg.CONTROL_PLANE:
        assert ("DRADeviceTaints" in got.of(c)) is wanted
    assert "DRADeviceTaints" not in got.of("kubelet")
    assert got.runtime_config == apis


def test_first_available_sets_prioritized_list_only_where_alpha() -> None:
    ask = {"smokeTest": {"firstAvailable": {"enabled": True}}}
    assert fg.required(track(33, **ask)).of("kube-scheduler")["DRAPrioritizedList"] is True
    assert "DRAPrioritizedList" not in fg.required(track(33, **ask)).of("kubelet")
    for minor in (34, 35, 36):
        assert fg.required(track(minor, **ask)).gates == {}


def test_user_gates_win_and_unknown_ones_reach_every_component() -> None:
    got = fg.required(track(34, ("DRAPrioritizedList=false", "SomeOtherGate=true")))
    assert got.of("kube-scheduler") == {"DRAPrioritizedList": False, "SomeOtherGate": True}
    assert got.of("kubelet") == {"SomeOtherGate": True}
    # A user's DRADeviceTaints on 1.34 brings the API its informers watch.
    assert fg.required(track(34, ("DRADeviceTaints=true",))).runtime_config == (fg.V1ALPHA3,)


# --- refusals ------------------------------------------------------------------------------------------


def paths(s: Settings) -> list[str]:
    return [p for p, _ in feature_gate_problems(s)]


def test_refusals_name_every_bad_field() -> None:
    s = track(32, gpuStack={"gpuHealth": True}, smokeTest={"gpuHealth": True, "firstAvailable": {"enabled": True}})
    assert paths(s) == ["settings.gpuStack.gpuHealth", "settings.smokeTest.firstAvailable.enabled"]
    assert paths(track(34, smokeTest={"gpuHealth": True})) == ["settings.smokeTest.gpuHealth"]
    off = track(34, ("DRAPrioritizedList=false", "DRADeviceTaints=false"),
                smokeTest={"firstAvailable": {"enabled": True}})
    assert paths(off) == ["settings.kubernetes.featureGates[0]"]
    assert paths(track(36, ("DRADeviceTaints=false",))) == ["settings.kubernetes.featureGates[0]"]
    assert paths(track(36)) == [] and paths(track(33, gpuStack={"gpuHealth": True})) == []


def test_validate_runs_the_refusals() -> None:
    from components.validate import validate

    found = validate(track(34, smokeTest={"gpuHealth": True}))
    assert any(p == "settings.smokeTest.gpuHealth" for p, _ in found)


# --- the platforms ------------------------------------------------------------------------------------


def test_user_data_gives_each_component_its_gates() -> None:
    s = track(34, gpuStack={"gpuHealth": True})
    c = ud.cluster_boot(s, "auth", "mint", addon_facts(s))
    cp = ud.control_plane_boot(s, "pki")
    boot = ud.bootstrap_config(c, cp)
    for component in ("kube-apiserver", "kube-scheduler", "kube-controller-manager"):
        assert boot[f"extra-node-{component}-args"]["--feature-gates"] == "DRADeviceTaints=true"
    assert boot["extra-node-kube-apiserver-args"]["--runtime-config"] == "resource.k8s.io/v1alpha3=true"
    assert "extra-node-kubelet-args" not in boot
    worker = ud.worker_join_config(c, ud.worker_boot(s, s.node_pools[0]))
    assert "--feature-gates" not in worker.get("extra-node-kubelet-args", {})


def test_kind_sets_the_union_on_the_node_images_minor() -> None:
    s = Settings.model_validate({"platform": "kind", "gpuStack": {"gpuHealth": True}})
    assert kc.gate_settings(s, 34) == ({"DRADeviceTaints": True}, {fg.V1ALPHA3: "true"})
    assert kc.gate_settings(Settings.model_validate({"platform": "kind"}), 34) == ({}, {})


def test_the_loopback_control_plane_gets_the_tables_flags() -> None:
    lc = load_tool("localcluster")
    raw = {"platform": "local", "gpuStack": {"gpuHealth": True}}
    kwargs = local_cluster_gates(raw)
    assert kwargs == {"feature_gates": {"DRADeviceTaints": True}, "runtime_config": (fg.V1ALPHA3,)}
    cluster = lc.LocalCluster("/nonexistent", bin_dir=Path("/nonexistent"), **kwargs)
    assert cluster.create_flags() == ["--kube-feature-gates", "DRADeviceTaints=true",
                                      "--kube-runtime-config", "resource.k8s.io/v1alpha3=true"]
    assert lc.LocalCluster("/nonexistent", bin_dir=Path("/nonexistent")).create_flags() == []


def test_node_tier_kubelets_get_the_kubelet_gates() -> None:
    nt = load_tool("nodetier")
    p = nt.NodePaths(Path("/r"), Path("/l"))
    conf = nt.kubelet_config(0, p, port=1, healthz_port=2, cgroups="/c", feature_gates={"X": True})
    assert conf["featureGates"] == {"X": True}
    assert "featureGates" not in nt.kubelet_config(0, p, port=1, healthz_port=2, cgroups="/c")


def test_the_docs_hold_the_generated_table() -> None:
    assert fg.markdown_table() in (REPO / "docs" / "architecture.md").read_text()


# --- one place ----------------------------------------------------------------------------------------


def test_no_other_module_names_a_kubernetes_gate() -> None:
    """A gate name as a string literal anywhere in components/ or tools/ but the table is a second source."""
    names = "|".join(g.name for g in fg.GATES)
    literal = re.compile(rf"""["']({names})\b""")
    offenders = []
    for path in [*(REPO / "components").rglob("*.py"), *(REPO / "tools").glob("*.py")]:
        if path.name == "feature_gates.py" and path.parent.name == "facts":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if literal.search(line) and not line.lstrip().startswith("#"):  # comments may name them
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert offenders == []
