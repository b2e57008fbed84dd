"""Values for charts/gpu-smoke-test and the run id that names its objects (pure functions)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..facts.cluster import ClusterFacts
from ..facts.nodes import pool_label
from ..kube.charts import chart_dir
from ..settings.model import Settings, SmokeTestSettings
from ..tables import pins
from .cases import FAMILIES
from .expectations import DRIVER, SCHEDULER_NAMES
from .images import image_values, pinned_image

CHART = "gpu-smoke-test"
RUN_ID_LENGTH = 8
JOB_DEADLINE_GRACE_SECONDS = 300


class SmokeConfigError(ValueError):
    """The smoke test cannot run against this cluster shape (message names the setting)."""


# charts/gpu-smoke-test renders claims in the v1 / v1beta2 shape (`exactly:` requests), not v1beta1's.
CHART_APIS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2")


def resource_api(kubernetes_minor: int) -> str:
    """The DRA API the chart renders: v1 from 1.34 (GA), v1beta2 on 1.33 (same claim shape)."""
    api = pins.newest_dra_api(kubernetes_minor, CHART_APIS)
    if api is not None:
        return api
    raise SmokeConfigError(
        f"the smoke test needs Kubernetes >= 1.33 (resource.k8s.io/v1beta2 or v1), the cluster is 1.{kubernetes_minor}"
    )


def probe_image(t: SmokeTestSettings, pinned: pins.ImagePin) -> pins.ImagePin:
    """smokeTest.image or the pin."""
    return pinned_image(t.image, pinned)


def node_selector(settings: Settings) -> dict[str, str]:
    """smokeTest.pool as a nodeSelector on the pool label; {}: any GPU node."""
    pool = settings.smoke_test.pool
    return {pool_label(settings): pool} if pool is not None else {}


def tolerations(settings: Settings) -> list[dict[str, str]]:
    """Tolerate every GPU pool taint (by key and effect), so the pods reach the GPU nodes."""
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for pool in settings.node_pools:
        for taint in pool.taints:
            seen.setdefault((taint.key, taint.effect),
                            {"key": taint.key, "operator": "Exists", "effect": taint.effect})
    return [seen[k] for k in sorted(seen)]


def chart_values(
    settings: Settings, facts: ClusterFacts, image: pins.ImagePin, *, run_id: str
) -> dict[str, Any]:
    t: SmokeTestSettings = settings.smoke_test
    kai = t.scheduler == "kai"
    values: dict[str, Any] = {
        "runId": run_id,
        "image": image_values(probe_image(t, image), t.registry, settings.images.mirror),
        "imagePullSecrets": [{"name": n} for n in t.image_pull_secrets],
        "resourceApi": resource_api(facts.kubernetes_minor),
        "deviceClassName": t.device_class,
        "attributeDomain": DRIVER,
        "selectors": {
            "productNamePattern": t.product_name_pattern or "",
            "minMemoryGiB": t.min_memory_gib or 0,
            "cel": [],
        },
        "gpus": t.gpus,
        "scheduler": {"name": SCHEDULER_NAMES[t.scheduler], "queue": t.queue if kai else ""},
        "probe": {
            "expect": facts.gpu_view,
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
        },
        "barrier": {"enabled": True, "timeoutSeconds": t.timeout_seconds},
        # The runner gives up first and collects while the pods still exist; the Job's own
        # deadline only cleans up when no runner is left (a killed `pulumi up`).
        "activeDeadlineSeconds": t.timeout_seconds + JOB_DEADLINE_GRACE_SECONDS,
        "suspend": True,
        "tolerations": tolerations(settings),
        "nodeSelector": node_selector(settings),
        "networkPolicy": {"enabled": True},
    }
    for family in FAMILIES:  # each case family's own values (components/smoke/cases)
        for key, value in family.values(settings).items():
            if key == "cases":
                values.setdefault("cases", {}).update(value)
            else:
                values[key] = value
    return values


def chart_digest(path: Path | None = None) -> str:
    """sha256 over the chart's files: a template change re-runs the test like a value change does."""
    root = path or chart_dir(CHART)
    h = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return h.hexdigest()


def run_id(values: dict[str, Any], trigger: str, digest: str) -> str:
    """Stable while nothing changes; new when the values, the chart or settings.smokeTest.trigger do.

    Lowercase hex, so it is a valid suffix for every Kubernetes name it ends up in.
    """
    body = {k: v for k, v in values.items() if k != "runId"}
    doc = json.dumps({"values": body, "trigger": trigger, "chart": digest}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:RUN_ID_LENGTH]
