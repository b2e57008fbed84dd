"""Values for charts/gpu-smoke-test and the run id that names its objects (pure functions)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from components import pins
from components.charts import chart_dir
from components.cluster_facts import ClusterFacts
from components.efa import HUGEPAGES_2MI
from components.nodes import pool_label
from components.settings.model import Settings, SmokeTestSettings
from components.smoke import all_reduce
from components.smoke.expectations import DRIVER, MIG_DEVICE_CLASS, SCHEDULER_NAMES, SHARING_STRATEGIES

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


def image_values(pin: pins.ImagePin, registry: str | None = None) -> dict[str, Any]:
    """Split a pinned image into registry and repository so a mirror can replace the registry only."""
    head, _, rest = pin.repository.partition("/")
    # A first path part with a dot or port is a registry host (docker.io, ghcr.io, mirror:5000).
    own_registry, repository = (head, rest) if rest and ("." in head or ":" in head) else ("", pin.repository)
    return {
        "registry": registry if registry is not None else own_registry,
        "repository": repository,
        "tag": pin.tag,
        "digest": pin.digest,
        "pullPolicy": "IfNotPresent",
    }


def pinned_image(ref: str | None, pinned: pins.ImagePin) -> pins.ImagePin:
    """An image setting (`<repository>:<tag>@sha256:<hex>`, syntax checked by the settings) or the pin."""
    if ref is None:
        return pinned
    ref, _, digest = ref.partition("@")
    repository, _, tag = ref.rpartition(":")
    return pins.ImagePin(repository, tag, digest)


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


def gpu_sharing(t: SmokeTestSettings) -> dict[str, Any]:
    """GpuConfig `sharing` for the shared cases' claims ({}: none), shaped like NVIDIA's GpuSharing
    (dra-driver-nvidia-gpu v0.4.1 api/nvidia.com/resource/v1beta1/sharing.go; demo gpu-test5)."""
    if t.sharing == "timeSlicing":
        # Always explicit: the driver's TimeSlicingConfig.Validate reads the interval through a pointer
        # that only its own default (no timeSlicingConfig at all) fills in (validate.go, gpuconfig.go).
        return {"strategy": SHARING_STRATEGIES[t.sharing],
                "timeSlicingConfig": {"interval": t.time_slicing_interval or "Default"}}
    if t.sharing == "mps":
        mps: dict[str, Any] = {}
        if t.mps_active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = t.mps_active_thread_percentage
        if t.mps_pinned_memory_limit_mib is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = f"{t.mps_pinned_memory_limit_mib}Mi"
        return {"strategy": SHARING_STRATEGIES[t.sharing], "mpsConfig": mps}
    return {}


# allReduce pods: whole nodes, so generous; hugepages and extended resources need requests == limits
# (Kubernetes: hugepages-* requests need cpu or memory requests too). /dev/shm is memory-backed and
# counts against the memory limit: NCCL's intra-node SHM transport and its proxy buffers live there.
ALL_REDUCE_CPU_PER_GPU = 4
ALL_REDUCE_MEMORY = "96Gi"
ALL_REDUCE_SHM = "16Gi"
ALL_REDUCE_SSH_PORT = 2222  # sshd in every pod but index 0 (unprivileged: above 1024)
ALL_REDUCE_KEY_PORT = 2223  # index 0 serves its per-run public key here until every peer has it


def all_reduce_values(settings: Settings) -> dict[str, Any]:
    """charts/gpu-smoke-test `allReduce` (templates/job-all-reduce.yaml); {"enabled": false} when off."""
    t = settings.smoke_test
    a = t.all_reduce
    if not a.enabled:
        return {"enabled": False}
    found = all_reduce.pool(settings)
    shape = all_reduce.node_shape(found[1]) if found else None
    level = all_reduce.topology_label(settings)
    if found is None or shape is None or not shape.efa or level is None:
        # The settings rules refuse each of these first (components/settings/rules.py _smoke_all_reduce):
        # a plain ValueError, so components/validate.py leaves their message alone.
        raise ValueError("smokeTest.allReduce needs a pool with EFA and known GPUs, and a topology level")
    hugepages = f"{HUGEPAGES_2MI * 2}Mi"
    exact = {"memory": ALL_REDUCE_MEMORY, "hugepages-2Mi": hugepages, all_reduce.EFA_RESOURCE: str(shape.efa)}
    return {
        "enabled": True,
        "image": image_values(pinned_image(a.image, pins.image("nccl-tests")), t.registry),
        "nodes": a.nodes,
        "gpusPerNode": shape.gpus,
        "nodeSelector": {pool_label(settings): found[1].name},
        "topology": {"name": settings.gpu_stack.topology.name, "level": level, "placement": a.placement},
        "minBytes": a.min_bytes,
        "maxBytes": a.max_bytes,
        "sshPort": ALL_REDUCE_SSH_PORT,
        "keyPort": ALL_REDUCE_KEY_PORT,
        "timeoutSeconds": t.timeout_seconds,
        "shmSizeLimit": ALL_REDUCE_SHM,
        "resources": {"requests": {"cpu": str(ALL_REDUCE_CPU_PER_GPU * shape.gpus), **exact}, "limits": exact},
    }


def chart_values(
    settings: Settings, facts: ClusterFacts, image: pins.ImagePin, *, run_id: str
) -> dict[str, Any]:
    t: SmokeTestSettings = settings.smoke_test
    kai = t.scheduler == "kai"
    return {
        "runId": run_id,
        "image": image_values(probe_image(t, image), t.registry),
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
        "cases": {
            "wholeGpu": t.whole_gpu,
            "sharedClaim": t.shared_claim,
            "sharedNamedClaim": t.shared_named_claim,
            "gang": t.gang,
            "mig": {"enabled": bool(t.mig), "deviceClassName": MIG_DEVICE_CLASS, "profile": t.mig_profile or ""},
        },
        "sharing": {"driver": DRIVER, "gpuSharing": gpu_sharing(t)},
        "allReduce": all_reduce_values(settings),
    }


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
