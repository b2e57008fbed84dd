"""Files an offline plan writes: resources.json, rendered manifests, release values, user-data."""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Any

import yaml

from ..addons.karpenter import on_existing_aws
from ..aws.karpenter import existing_controller_policy
from ..kube.charts import CHARTS_DIR, local_chart_dir, render
from ..runtime.atomic import write_text_atomic
from ..tables import tokens
from ..tables.paths import PROJECT_DIR
from .mockengine import MASK, Recorded
from .portable import portable
from .run import Plan
from .tree import counts

RELEASE = tokens.K8S_HELM_V3_RELEASE
USER_DATA_TYPES = {tokens.AWS_EC2_LAUNCH_TEMPLATE, tokens.AWS_EC2_INSTANCE}
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def resources_document(plan: Plan) -> dict[str, Any]:
    return {
        "project": "ck8s-gpu",
        "stack": plan.stack,
        "counts": counts(plan.resources),
        "outputs": portable(plan.outputs),
        "resources": [portable(r.to_json()) for r in sorted(plan.resources, key=lambda r: r.urn)],
    }


def user_data(r: Recorded) -> str | None:
    """Decoded user-data of a launch template (base64) or instance (plain); None when absent/secret."""
    value = r.inputs.get("userData")
    if not isinstance(value, str) or value in ("", MASK, "<computed>"):
        return None
    if r.type == tokens.AWS_EC2_LAUNCH_TEMPLATE:
        try:
            return base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return value
    return value


def _dump_all(objects: list[Any]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False)


def chart_name(r: Recorded) -> str:
    """A release's chart without repository or path (`oci://.../kai-scheduler` -> `kai-scheduler`)."""
    chart = r.inputs.get("chart")
    return chart.rstrip("/").rsplit("/", 1)[-1] if isinstance(chart, str) else ""


def local_chart(r: Recorded) -> str | None:
    chart = r.inputs.get("chart")
    if not isinstance(chart, str):
        return None
    path = local_chart_dir(chart, PROJECT_DIR)
    try:
        path.resolve().relative_to(CHARTS_DIR)
    except ValueError:
        return None
    return path.name if (path / "Chart.yaml").is_file() else None


def kubernetes_object(r: Recorded) -> dict[str, Any] | None:
    """The manifest of a raw Kubernetes resource (not Helm, not a provider)."""
    if not r.type.startswith("kubernetes:") or r.type == RELEASE or r.type.startswith("pulumi:providers"):
        return None
    return {k: v for k, v in r.inputs.items() if k in ("apiVersion", "kind", "metadata", "spec", "data",
                                                        "stringData", "rules", "roleRef", "subjects", "type")}


def write(plan: Plan, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(rel: str, text: str) -> None:
        path = out / rel
        write_text_atomic(path, text)
        written.append(path)

    put("resources.json", json.dumps(resources_document(plan), indent=2, sort_keys=True) + "\n")
    objects: list[dict[str, Any]] = []
    for r in plan.resources:
        name = _SAFE.sub("_", r.name)
        if r.type in USER_DATA_TYPES and (text := user_data(r)) is not None:
            put(f"user-data/{name}.yaml", text)
        elif r.type == RELEASE:
            values = portable(r.inputs.get("values") or {})
            put(f"releases/{name}.values.yaml", yaml.safe_dump(values, sort_keys=True))
            chart = local_chart(r)
            if chart is not None:
                rendered = render(chart, values, release=str(r.inputs.get("name") or r.name),
                                  namespace=str(r.inputs.get("namespace") or "default"))
                put(f"manifests/{name}.yaml", _dump_all(rendered))
        elif (obj := kubernetes_object(r)) is not None:
            objects.append(obj)
    if objects:  # registration order follows the program's async outputs: sorted, so two plans diff clean
        objects.sort(key=lambda o: (str(o.get("apiVersion")), str(o.get("kind")),
                                    str((o.get("metadata") or {}).get("namespace") or ""),
                                    str((o.get("metadata") or {}).get("name") or "")))
        put("manifests/objects.yaml", _dump_all(objects))
    if on_existing_aws(plan.settings):
        # Nothing here attaches it: the user's control-plane role must carry it (docs/autoscaling.md).
        put("iam/karpenter-controller-policy.json",
            json.dumps(existing_controller_policy(plan.settings), indent=2, sort_keys=True) + "\n")
    return written
