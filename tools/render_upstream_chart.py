#!/usr/bin/env python3
"""Render an add-on's REAL upstream chart with the values a committed stack gives it, and judge it.

Run by a maintainer at every pin change of a third-party chart (components/tables/pins.py CHARTS). CI
cannot fetch charts, and fetched code never enters the project, so the chart is given by path: an
unpacked copy of the pinned version (`helm pull --untar`, or `git archive <commit> <chart dir>`).

    .venv/bin/python tools/render_upstream_chart.py --chart /tmp/aws-efa-k8s-device-plugin \\
        --addon aws-efa-k8s-device-plugin --stack aws-prod [--enable]

The values are the program's own (components.addons.graph final_values over the stack's
settings, as tests/unit/addons/test_charts.py renders this repository's charts); `--enable` turns
the add-on on in a copy of the settings when the stack leaves it off. Problems, each printed:
- the chart is not the add-on's (name) or not the pinned version;
- a values key the chart does not have (Helm ignores it silently);
- an object that fails strict Kubernetes schema validation at 1.34/1.35/1.36, a custom resource
  one against its CRD's schema (the chart's crds/ or a rendered CRD), unknown fields refused;
- what the policy pack judges in objects: unpinned images, GPU advertisers, Secret readers,
  secret material in pod specs and ConfigMaps;
- pods that need a weaker Pod Security level than the add-on's namespace enforces, or a
  privileged namespace the pack does not know the chart needs (namespaces.PRIVILEGED_CHARTS);
- a `nodeSelector` / `tolerations` value that does not reach the rendered pods.
Exit status: 0 no problem; 1 a problem; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Pod Security levels, weakest first, as namespaces.LEVELS is strongest first.
_RANK = {"privileged": 0, "baseline": 1, "restricted": 2}


def unknown_keys(values: Mapping[str, Any], defaults: Any, prefix: str = "") -> Iterator[str]:
    """Dotted paths of `values` the chart's values.yaml does not have. Below an empty or absent
    mapping (nodeSelector: {}, free-form maps) anything goes: only known, non-empty maps judge."""
    if not isinstance(defaults, Mapping) or not defaults:
        return
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in defaults:
            yield path
        elif isinstance(value, Mapping):
            yield from unknown_keys(value, defaults[key], f"{path}.")


def chart_values(chart_dir: Path) -> dict[str, Any]:
    """The chart's values.yaml with each bundled subchart's (charts/<dir>/) under its name, the
    parent's own keys winning: the defaults Helm merges before it renders."""
    values: dict[str, Any] = yaml.safe_load((chart_dir / "values.yaml").read_text()) or {}
    subcharts = sorted((chart_dir / "charts").glob("*/Chart.yaml")) if (chart_dir / "charts").is_dir() else []
    for sub in subcharts:
        name = (yaml.safe_load(sub.read_text()) or {}).get("name")
        sub_values = sub.parent / "values.yaml"
        if name and sub_values.is_file():
            own = values.get(name)
            sub_defaults = yaml.safe_load(sub_values.read_text()) or {}
            values[name] = {**sub_defaults, **(own if isinstance(own, Mapping) else {})}
    return values


def stack_settings(stack: str, enable: bool, addon: Any) -> Any:
    from components.plan.run import stack_file
    from components.settings.load import SETTINGS_KEY, read_stack_file
    from components.validate import from_config

    path = stack_file(stack)
    config = read_stack_file(path)
    if enable:
        config = copy.deepcopy(config)
        from pydantic.alias_generators import to_camel

        addons = config.setdefault(SETTINGS_KEY, {}).setdefault("gpuStack", {}).setdefault("addons", {})
        addons.setdefault(to_camel(addon.settings_key), {})["enabled"] = True
    return from_config(config, str(path), offline=True)


def problems(chart_dir: Path, addon_name: str, stack: str, enable: bool) -> tuple[list[str], list[str]]:
    """(what was rendered, problems) for one add-on's upstream chart over one stack's values."""
    from components.addons.catalog import BY_NAME
    from components.addons.graph import final_values, install_graph
    from components.settings.load import SettingsError

    try:
        settings = stack_settings(stack, enable, BY_NAME[addon_name])
    except SettingsError as exc:  # e.g. --enable where the add-on's own check refuses the stack
        return [], [exc.message]
    all_values = final_values(install_graph(settings), settings)
    if addon_name not in all_values:
        return [], [f"{addon_name} is off in stack {stack}: pass --enable to render it anyway"]
    return judge(chart_dir, addon_name, settings, all_values[addon_name])


def judge(chart_dir: Path, addon_name: str, settings: Any, values: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(what was rendered, problems) for one add-on's upstream chart over the values the program
    computed for `settings` (`problems` computes them from a committed stack)."""
    import helm_python
    import kubernetes_validate

    from components.addons.catalog import BY_NAME
    from components.policies import namespaces
    from components.policies.host_access import breaches as baseline_breaches
    from components.policies.k8s_objects import K8sObject, pod_spec
    from components.policies.rbac import reader_problems
    from components.policies.secrets import viewable_secret_problems
    from components.policies.workloads import gpu_advertisers, image_problems
    from tests.helpers.k8s_schema import VERSIONS, crd_schemas, custom_resource_errors, schema_errors

    addon = BY_NAME[addon_name]
    out: list[str] = []
    meta = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    want = addon.version(settings)
    if meta.get("name") != addon.chart_name:
        out.append(f"chart is {meta.get('name')!r}, the add-on installs {addon.chart_name!r}")
    if str(meta.get("version")) != want:
        out.append(f"chart version {meta.get('version')} is not the pinned {want}")
    defaults = chart_values(chart_dir)
    out += [f"values key {k}: not in the chart's values.yaml (Helm ignores it)" for k in unknown_keys(values, defaults)]

    rendered = helm_python.Chart.load(chart_dir).render(copy.deepcopy(values), name=addon.release_name,
                                                         namespace=addon.namespace, is_install=True)
    docs: list[dict[str, Any]] = []
    for path in sorted(rendered):
        if path.endswith((".yaml", ".yml", ".json")):
            docs += [d for d in yaml.safe_load_all(rendered[path]) if d]
    seen = [f"{d['kind']} {d['metadata'].get('name')}" for d in docs]
    # A custom resource is judged against the CRD that defines it: the chart's crds/ (never
    # rendered by Helm's templates), one its templates render, or the Prometheus Operator's
    # ServiceMonitor / PrometheusRule at the pin, which another add-on installs (tools/build.sh
    # generates them into the tools cache; absent there, such an object is reported as unjudged).
    crd_files = sorted((chart_dir / "crds").rglob("*.y*ml")) if (chart_dir / "crds").is_dir() else []
    monitoring = _monitoring_crds()
    crd_docs = [d for f in [*crd_files, *monitoring] for d in yaml.safe_load_all(f.read_text()) if d]
    schemas = crd_schemas([*crd_docs, *docs])
    for d in docs:
        for version in VERSIONS:
            try:
                why = schema_errors(d, version)
            except kubernetes_validate.SchemaNotFoundError:  # a custom resource: once, by its CRD
                if (why := custom_resource_errors(d, schemas)) is not None:
                    out.append(f"schema CRD: {why}")
                break
            if why is not None:
                out.append(f"schema {version}: {why}")
    urn = f"upstream:{addon.chart_name}@{meta.get('version')}"
    objs = [K8sObject(str(d["kind"]), d, urn) for d in docs]
    out += [f"policy workload-images-pinned: {m}" for _, m in image_problems(objs)]
    out += [f"policy secrets: {m}" for _, m in viewable_secret_problems(objs)]
    out += [f"policy rbac: {m}" for _, m in reader_problems(objs)]
    if not addon.provides(settings):  # a GPU advertiser says so (capability dra-gpus / gpu-driver)
        for o in objs:
            plugins, dra = gpu_advertisers(o)
            out += [f"advertises GPUs though the add-on provides nothing: {w}" for w in plugins + dra]

    pods = [(o, p) for o in objs if (p := pod_spec(o)) is not None]
    breaches = [f"{o}: {b}" for o, p in pods for b in baseline_breaches(p)]
    needed = "privileged" if breaches else "baseline"
    if _RANK[addon.pod_security] > _RANK[needed]:
        out += [f"namespace {addon.namespace} enforces {addon.pod_security}, which refuses {b}" for b in breaches]
    if addon.pod_security == "privileged" and addon.chart_name not in namespaces.PRIVILEGED_CHARTS:
        out.append(f"policy gpu-namespace-pod-security: chart {addon.chart_name} is not in "
                   "namespaces.PRIVILEGED_CHARTS, so its privileged namespace is refused")
    if addon.pod_security == "privileged" and not breaches:
        out.append(f"namespace {addon.namespace} is privileged but no rendered pod needs more than baseline")
    for o, p in pods:
        for key, value in (values.get("nodeSelector") or {}).items():
            if (p.get("nodeSelector") or {}).get(key) != value:
                out.append(f"{o}: nodeSelector {key}={value} from the values is not in the pod spec")
        for t in values.get("tolerations") or []:
            if t not in (p.get("tolerations") or []):
                out.append(f"{o}: toleration {t} from the values is not in the pod spec")
    return seen, out


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chart", required=True, type=Path, help="the unpacked upstream chart (has Chart.yaml)")
    ap.add_argument("--addon", required=True, help="the add-on's catalog name, e.g. aws-efa-k8s-device-plugin")
    ap.add_argument("--stack", required=True, help="a committed stack (stacks/Pulumi.<stack>.yaml)")
    ap.add_argument("--enable", action="store_true", help="turn the add-on on in a copy of the settings")
    return ap.parse_args(argv)


def _monitoring_crds() -> list[Path]:
    """The monitoring.coreos.com CRDs tools/build.sh generated at the pin, where the cache has them."""
    import subprocess

    try:
        bin_dir = Path(os.environ.get("CK8S_GPU_TOOLS_BIN") or subprocess.run(
            ["bash", str(REPO / "tools" / "build.sh"), "--print"], check=True, capture_output=True,
            text=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return []
    return sorted((bin_dir.parent / "crds" / "monitoring.coreos.com").glob("*.yaml"))


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    from components.addons.catalog import BY_NAME

    if not (a.chart / "Chart.yaml").is_file():
        print(f"render_upstream_chart: {a.chart} has no Chart.yaml", file=sys.stderr)
        return 2
    if a.addon not in BY_NAME or BY_NAME[a.addon].chart_pin is None:
        print(f"render_upstream_chart: {a.addon} is not an add-on with a pinned chart "
              f"({', '.join(n for n, x in sorted(BY_NAME.items()) if x.chart_pin)})", file=sys.stderr)
        return 2
    seen, found = problems(a.chart.resolve(), a.addon, a.stack, a.enable)
    for line in seen:
        print(f"rendered: {line}")
    for line in found:
        print(f"PROBLEM: {line}")
    print(f"render_upstream_chart: {a.addon} over stack {a.stack}: {len(seen)} objects, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
