"""The real autoscaler on the local control plane, for its CI scenarios and its cost benchmark:
Karpenter core at the pin with its KWOK provider and the AWS provider's GPU device model
(tools/mod/karpenter, built by tools/build.sh as `ck8s-karpenter-kwok`), the NodePools the aws
platform renders (components/facts/autoscaling.py) paired with a KWOKNodeClass, and simulated GPU
nodes that publish their ResourceSlices the moment they appear (tools/dra_publisher.py: the same
devices the local tiers use). One recipe, so the benchmark measures what the test proves.

What stands in for what:
- EC2 instances: KWOK nodes Karpenter's KWOK provider creates from NodeClaims (kwok/cloudprovider
  toNode), faked Ready by the cluster's KWOK controller (annotation kwok.x-k8s.io/node=fake). A
  KWOKNodeClass `nodeRegistrationDelay` models the instance's boot and join.
- The NVIDIA DRA driver's kubelet plugin: SlicePublisher, which publishes each new node's slice
  for its instance type's GPUs (components/tables/instance_types.py: count, product, memory).
- Instance types: components/tables/instance_types.py's GPU types as the KWOK provider's
  InstanceTypeOptions (kwok/cloudprovider/helpers.go): vCPUs from the table; memory 8 GiB per vCPU
  and prices (GPU count, in no currency) only so the KWOK provider can fit pods and rank
  offerings: neither is a fact about EC2.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from components.facts.autoscaling import NODEPOOL_LABEL, NodeClassRef
from components.tables.instance_types import GPU_INSTANCE_TYPES, gpu_facts
from components.tables.labels import KWOK_NODE_ANNOTATION
from tests.helpers.controller_env import stop_process
from tests.helpers.tools import load_tool

BINARY = "ck8s-karpenter-kwok"
KWOK_NODE_CLASS = NodeClassRef("karpenter.kwok.sh", "KWOKNodeClass", "ck8s-gpu")
ZONE = "eu-north-1a"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The one line ck8s-karpenter-kwok logs about the types it was given (tools/mod/karpenter main.go).
TYPES_LINE = "ck8s-gpu instance types"


def crd_dir(bin_dir: Path) -> Path:
    """Karpenter's CRDs at the pin, as tools/build.sh copies them beside the binaries."""
    return bin_dir.parent / "crds" / "karpenter"


def missing(bin_dir: Path) -> list[str]:
    out = [] if (bin_dir / BINARY).is_file() else [f"{bin_dir / BINARY}"]
    if not any(crd_dir(bin_dir).glob("*.yaml")):
        out.append(f"Karpenter's CRDs under {crd_dir(bin_dir)}")
    return out


def instance_types(types: Iterable[str] = GPU_INSTANCE_TYPES, zone: str = ZONE) -> list[dict[str, Any]]:
    """The KWOK provider's InstanceTypeOptions for these GPU types (see the module docstring)."""
    out = []
    for name in types:
        facts = gpu_facts(name)
        if facts is None:
            raise ValueError(f"{name!r} is not in components/tables/instance_types.py")
        offerings = [{
            "Price": float(facts.count) * (0.3 if capacity == "spot" else 1.0),
            "Available": True,
            "Requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
            ],
        } for capacity in ("on-demand", "spot")]
        out.append({
            "name": name,
            "offerings": offerings,
            "architecture": facts.cpu_arch,
            "operatingSystems": ["linux"],
            "resources": {"cpu": str(facts.vcpus), "memory": f"{facts.vcpus * 8}Gi", "pods": "110"},
        })
    return out


def kwok_node_class(registration_delay: str = "0s") -> dict[str, Any]:
    return {"apiVersion": f"{KWOK_NODE_CLASS.group}/v1alpha1", "kind": KWOK_NODE_CLASS.kind,
            "metadata": {"name": KWOK_NODE_CLASS.name}, "spec": {"nodeRegistrationDelay": registration_delay}}


@dataclass
class Karpenter:
    """One ck8s-karpenter-kwok process against `kubeconfig`; restartable (same state, new process)."""

    workdir: Path
    kubeconfig: Path
    bin_dir: Path
    types: Sequence[str] = tuple(GPU_INSTANCE_TYPES)
    batch_idle: str = "1s"
    batch_max: str = "5s"
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)
    starts: int = field(default=0, init=False)

    @property
    def log(self) -> Path:
        return self.workdir / f"karpenter-{self.starts}.log"

    def start(self) -> Karpenter:
        lc = load_tool("localcluster")
        self.workdir.mkdir(parents=True, exist_ok=True)
        types_file = self.workdir / "instance-types.json"
        types_file.write_text(json.dumps(instance_types(self.types)))
        self.starts += 1
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "INSTANCE_TYPES_FILE_PATH": str(types_file),
            # Off by default at the pin (options.go IGNORE_DRA_REQUESTS): the aws chart's
            # awsFeatureGates.draNVIDIAGPU turns it off the same way (components/addons/karpenter.py).
            "IGNORE_DRA_REQUESTS": "false",
            "SYSTEM_NAMESPACE": "kube-system",
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(lc.free_port()),
            "HEALTH_PROBE_PORT": str(lc.free_port()),
            "BATCH_IDLE_DURATION": self.batch_idle,
            "BATCH_MAX_DURATION": self.batch_max,
            "LOG_LEVEL": "debug",
        }
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen([str(self.bin_dir / BINARY)], env=env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is not None:
            stop_process(self.proc, kill=kill)
        self.proc = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def unmodeled(self, timeout: float = 60) -> list[str] | None:
        """The types this process found no GPU device template for, from its own log line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log.read_text(errors="replace").splitlines():
                if TYPES_LINE in line:
                    entry = json.loads(line[line.index("{"):])
                    return list(entry.get("withoutGPUTemplates") or [])
            if not self.alive():
                raise RuntimeError(f"{BINARY} exited: {self.tail()}")
            time.sleep(0.5)
        return None

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


class SlicePublisher:
    """Publishes, for every node Karpenter launched, the slice its GPUs would get from the NVIDIA DRA
    driver, and removes the slices of nodes that are gone (the driver's plugin goes with its node).

    It also keeps one promise of EC2 the KWOK provider does not: an instance, once launched, boots
    and registers even if the controller that launched it died. The KWOK provider creates the Node
    in a goroutine of the Karpenter process after the node class's registration delay (kwok/
    cloudprovider/cloudprovider.go Create); a Karpenter killed in between takes that "instance" with
    it. A launched NodeClaim (status.providerID kwok://<node>) still without its Node `boot_after`
    seconds after launch gets the Node that goroutine would have made (the same file's toNode:
    the claim's labels and annotations, the KWOK annotation, the unregistered taint, capacity = the
    claim's requests, allocatable = those with the instance's allocatable over them)."""

    def __init__(self, kubectl: Callable[..., str], kubeconfig: Path, kubectl_bin: Path,
                 interval: float = 0.5, boot_after: float = 20.0) -> None:
        self._kubectl, self._kubeconfig, self._bin = kubectl, kubeconfig, kubectl_bin
        self._interval = interval
        self._boot_after = boot_after
        self.booted: list[str] = []  # nodes this class made for a launch whose controller died
        self._stop = threading.Event()
        self.published: dict[str, float] = {}  # node -> time.monotonic() when its slice was applied
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SlicePublisher:
        dra = load_tool("dra_publisher")
        subprocess.run([str(self._bin), "--kubeconfig", str(self._kubeconfig), "apply", "--server-side",
                        "--field-manager=ck8s-gpu-dra-publisher", "-f", "-"],
                       input=json.dumps(dra.device_class_manifest()), check=True, capture_output=True, text=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        dra = load_tool("dra_publisher")
        while not self._stop.is_set():
            try:
                nodes = json.loads(self._kubectl("get", "nodes", "-l", NODEPOOL_LABEL, "-o", "json"))["items"]
                names = {}
                for n in nodes:
                    name, itype = n["metadata"]["name"], n["metadata"]["labels"].get(INSTANCE_TYPE_LABEL, "")
                    names[name] = itype
                fresh = {n: t for n, t in names.items() if n not in self.published}
                if fresh:
                    models = {n: gpu_model(t) for n, t in fresh.items()}
                    dra.publish(str(self._kubeconfig), {n: gpu_count(t) for n, t in fresh.items()},
                                kubectl=str(self._bin), model=models)
                    now = time.monotonic()
                    self.published.update(dict.fromkeys(fresh, now))
                for gone in [n for n in self.published if n not in names]:
                    self._kubectl("delete", "resourceslice", f"{gone}-{dra.DRIVER}", "--ignore-not-found")
                    del self.published[gone]
                self._boot_orphans(set(names))
            except (RuntimeError, subprocess.CalledProcessError, json.JSONDecodeError, KeyError) as e:
                self.errors.append(str(e)[:300])
            self._stop.wait(self._interval)


    def _boot_orphans(self, nodes: set[str]) -> None:
        claims = json.loads(self._kubectl("get", "nodeclaims", "-o", "json"))["items"]
        all_nodes = {n["metadata"]["name"] for n in json.loads(self._kubectl("get", "nodes", "-o", "json"))["items"]}
        for claim in claims:
            status = claim.get("status") or {}  # a claim just created has none yet
            provider_id = status.get("providerID", "")
            launched = next((c for c in status.get("conditions", [])
                             if c["type"] == "Launched" and c["status"] == "True"), None)
            if not provider_id.startswith("kwok://") or launched is None or claim["metadata"].get("deletionTimestamp"):
                continue
            name = provider_id.removeprefix("kwok://")
            if name in all_nodes or name in nodes:
                continue
            since = datetime.fromisoformat(launched["lastTransitionTime"].replace("Z", "+00:00"))
            if (datetime.now(UTC) - since).total_seconds() < self._boot_after:
                continue
            requests = claim["spec"].get("resources", {}).get("requests", {})
            node = {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": claim["metadata"].get("labels", {}),
                             "annotations": {**claim["metadata"].get("annotations", {}), KWOK_NODE_ANNOTATION: "fake"}},
                "spec": {"providerID": provider_id,
                         "taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]},
            }
            self._kubectl("create", "-f", "-", input=json.dumps(node))
            patch = {"status": {"capacity": requests, "allocatable": {**requests, **status.get("allocatable", {})}}}
            self._kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(patch))
            self.booted.append(name)


def gpu_count(instance_type: str) -> int:
    facts = gpu_facts(instance_type)
    if facts is None:
        raise ValueError(f"{instance_type!r} is not in components/tables/instance_types.py")
    return facts.count


def gpu_model(instance_type: str) -> Any:
    facts = gpu_facts(instance_type)
    if facts is None:
        raise ValueError(f"{instance_type!r} is not in components/tables/instance_types.py")
    return load_tool("dra_publisher").GpuModel.of(facts.product_name, facts.architecture, facts.memory_mib)


def gpu_claim_pod(name: str, *, product: str, count: int, namespace: str = "default",
                  labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None,
                  tolerate: Sequence[Mapping[str, str]] = ()) -> list[dict[str, Any]]:
    """A pod and its ResourceClaimTemplate asking for `count` GPUs of product `product` (the
    NVIDIA driver's productName attribute), as a user's job would (docs/autoscaling.md)."""
    template = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": count,
            "selectors": [{"cel": {"expression":
                           f"device.attributes['gpu.nvidia.com'].productName == '{product}'"}}],
        }}]}}},
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {}),
                     "annotations": dict(annotations or {})},
        "spec": {
            "restartPolicy": "Never",
            "tolerations": [dict(t) for t in tolerate],
            "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": name}],
            "containers": [{"name": "job", "image": "ck8s-gpu.local/probe:none",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                          "claims": [{"name": "gpus"}]}}],
        },
    }
    return [template, pod]


def karpenter_events(kubectl: Callable[..., str], pod: str, namespace: str = "default") -> list[str]:
    """Messages of the events Karpenter (not the kube-scheduler) wrote about `pod`."""
    items = json.loads(kubectl("get", "events", "-n", namespace, "--field-selector",
                               f"involvedObject.name={pod}", "-o", "json"))["items"]
    return [e.get("message", "") for e in items
            if "karpenter" in ((e.get("source") or {}).get("component", "") + e.get("reportingComponent", ""))]


