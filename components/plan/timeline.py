"""Time to first GPU job: the plan's dependency graph as a timeline (pure).

Every planned resource becomes a step whose duration comes from the one table in
`components/plan/durations.py`. Work the engine never sees as a resource is added as synthetic
steps where it really happens: a node's first boot (cloud-init, snap install, bootstrap or join,
Ready), the NLB registering its target, the GPU Operator's driver and toolkit on the GPU nodes
(hidden inside the ClusterPolicy wait), the DRA kubelet plugin starting once the driver is there
(its release installs beside the operator; the smoke run waits for its ResourceSlices). Steps
start when all their dependencies have finished
(Pulumi's behaviour: a resource's operation starts once every resource it depends on is done);
the longest chain to the smoke run is the critical path, by upper and by lower bounds.

A pool on a Capacity Block that starts later (`capacityReservation.startsAt`) gets a wait step of
its own whose length is the start less `now` (a parameter: tests fix it, the CLI passes the
clock): EC2 launches into a block only while it is active (EC2 User Guide,
capacity-blocks-launch.html; EC2 Auto Scaling User Guide, launch-template-capacity-blocks.html),
so the pool's launch, and all that waits on its GPU nodes, comes after it. An Auto Scaling group
that waits for capacity (waitForCapacityTimeout other than "0") holds its own step, and all that
depends on it, until then; past the timeout its create fails (`Timeline.warnings`).

A node's user-data says what its image carries (`NodeMedia`, docs/adr/0043): a snap from the
image installs from disk and waits for no NAT route; preloaded images add containerd's side-load
(started with the bootstrap or join) that the node's Ready waits for, and when every node is
preloaded the rows whose ranges include pulls give way to their preloaded variants
(durations.PRELOADED_VARIANTS). The node script reaches AWS's APIs (secrets, a worker's token)
before it bootstraps or joins: through the stack's interface endpoints where it has them, else
through the NAT routes.

`what_if` variants are the choices that would shorten it (the driver modes of docs/adr/0018), so
the plan can say what each one saves (components/plan/timeline_render.py prints them).

This module is the graph and its schedule; beside it: `node_media.py` (what a node's user-data
says its image carries), `operator_modes.py` (the driver and toolkit modes the GPU Operator's
values choose), `what_if.py` (the what-ifs), `timeline_of_plan.py` (all of it for a plan, with the
Capacity Block warnings).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..settings.platforms import traits
from ..tables import tokens
from .artifacts import RELEASE, chart_name, local_chart, user_data
from .durations import DURATIONS, PRELOADED_VARIANTS, Duration
from .mockengine import Recorded
from .node_media import NodeMedia, node_media
from .operator_modes import toolkit_mode_of

SMOKE_RUN = tokens.DYNAMIC_SMOKE_RUN
API_READY = tokens.DYNAMIC_API_READY
WAIT_FOR = tokens.DYNAMIC_WAIT_FOR
CLUSTER_POLICY_READY = tokens.DYNAMIC_CLUSTER_POLICY_READY
INSTANCE = tokens.AWS_EC2_INSTANCE
ASG = tokens.AWS_AUTOSCALING_GROUP
LAUNCH_TEMPLATE = tokens.AWS_EC2_LAUNCH_TEMPLATE
NLB = tokens.AWS_LB_LOAD_BALANCER
TARGET_ATTACHMENT = tokens.AWS_LB_TARGET_GROUP_ATTACHMENT
NODE_UPGRADE = tokens.DYNAMIC_NODE_UPGRADE
NAT_ROUTE_TYPE = tokens.AWS_EC2_ROUTE
VPC_ENDPOINT = tokens.AWS_EC2_VPC_ENDPOINT
# AWS APIs components/aws/scripts/ck8s-node.sh calls before its bootstrap or join: Secrets Manager
# (PKI, join auth), Elastic Load Balancing (the API's name), EC2 (peers), SSM (a worker's token).
NODE_SCRIPT_APIS = ("secretsmanager", "elasticloadbalancing", "ec2", "ssm")
DRIVER_MODES = ("compiled", "precompiled", "host")
DRA_CHART = "dra-driver-nvidia-gpu"
NODEPOOLS_CHART = "karpenter-nodepools"  # components/addons/karpenter_nodepools.py
SMOKE_CHART = "gpu-smoke-test"

_AWS_KEYS = {
    tokens.AWS_EC2_VPC: "aws-vpc",
    tokens.AWS_EC2_SUBNET: "aws-subnet",
    tokens.AWS_EC2_ROUTE: "aws-route",
    tokens.AWS_EC2_ROUTE_TABLE: "aws-route",
    tokens.AWS_EC2_ROUTE_TABLE_ASSOCIATION: "aws-route",
    tokens.AWS_EC2_INTERNET_GATEWAY: "aws-igw",
    tokens.AWS_EC2_EIP: "aws-eip",
    tokens.AWS_EC2_NAT_GATEWAY: "aws-nat",
    tokens.AWS_EC2_SECURITY_GROUP: "aws-sg",
    tokens.AWS_VPC_SECURITY_GROUP_INGRESS_RULE: "aws-sg-rule",
    tokens.AWS_VPC_SECURITY_GROUP_EGRESS_RULE: "aws-sg-rule",
    LAUNCH_TEMPLATE: "aws-launch-template",
    tokens.AWS_KMS_KEY: "aws-kms-key",
    NLB: "aws-nlb",
    INSTANCE: "aws-ec2-running",
    ASG: "aws-asg-capacity",
}
_DYNAMIC_KEYS = {
    API_READY: "api-ready-poll",
    WAIT_FOR: "wait-for-poll",
    CLUSTER_POLICY_READY: "wait-for-poll",  # first install: fresh at once, no settle window
    # draManagedBy operator: the gate's poll; the GPUCluster's operands (DRA plugin, validator) are
    # not modelled as steps yet (no committed stack runs that mode: issue 40).
    tokens.DYNAMIC_GPU_CLUSTER_READY: "wait-for-poll",
    tokens.DYNAMIC_GATEWAY_READY: "wait-for-poll",
    tokens.DYNAMIC_DRA_MODE_GUARD: "dra-mode-guard",
    NODE_UPGRADE: "upgrade-noop",
    tokens.DYNAMIC_POOL_UPGRADE: "upgrade-noop",
    tokens.DYNAMIC_UPGRADE_COMPLETE: "upgrade-noop",
    tokens.DYNAMIC_CRDS_FIRST: "crds-first",
    SMOKE_RUN: "smoke-run",
}


@dataclass(frozen=True)
class Step:
    id: str  # the resource's URN, or "synthetic:<name>"
    name: str  # the resource's logical name (without the cluster prefix), or what a synthetic step is
    key: str  # row of components/plan/durations.py
    deps: tuple[str, ...]
    type: str = ""  # resource type token ("" for a synthetic step)
    chart: str = ""  # chart name of a Helm release
    # A length the stack decides, not the table (the wait for a Capacity Block's start); its row
    # gives the label and the source.
    seconds: float | None = None

    @property
    def synthetic(self) -> bool:
        return not self.type

    @property
    def duration(self) -> Duration:
        row = DURATIONS[self.key]
        return row if self.seconds is None else replace(row, low=self.seconds, high=self.seconds)


# --------------------------------------------------------------------------------------------
# a node's boot media, from its user-data


# --------------------------------------------------------------------------------------------
# resources -> steps


def step_key(r: Recorded, platform: str = "aws") -> str:
    """The durations row of a planned resource: by type, by chart for Helm releases."""
    t = r.type
    if t in _AWS_KEYS:
        return _AWS_KEYS[t]
    if t == API_READY and traits(platform).needs_kubeconfig:
        return "api-ready-existing"
    if t == SMOKE_RUN and not traits(platform).has_kubelet:
        return "smoke-run-local"
    if t in _DYNAMIC_KEYS:
        return _DYNAMIC_KEYS[t]
    if t == RELEASE:
        if local_chart(r) is not None:
            return "helm-local"
        return {"gpu-operator": "helm-gpu-operator",
                "kube-prometheus-stack": "helm-kube-prometheus-stack"}.get(chart_name(r), "helm-remote")
    if t.startswith(tokens.PROVIDER_PREFIX):
        return "provider"
    if t.startswith(("tls:", "random:")):
        return "local-compute"
    if t == tokens.COMMAND_LOCAL and platform == "kind":
        return "kind-create"
    if t.startswith("aws:iam/"):
        return "aws-iam"
    if t.startswith("aws:"):
        return "aws-api"
    if t.startswith("kubernetes:"):
        return "k8s-object"
    return "unmapped"


def _expand(deps: Iterable[str], by_urn: Mapping[str, Recorded], children: Mapping[str, list[Recorded]]) -> set[str]:
    """Dependencies on a component mean its custom descendants (what the engine waits for)."""
    out: set[str] = set()
    todo = list(deps)
    while todo:
        urn = todo.pop()
        r = by_urn.get(urn)
        if r is None:
            continue
        if r.custom:
            out.add(urn)
        else:
            todo.extend(c.urn for c in children.get(urn, []))
    return out


def _cp_index(r: Recorded) -> int:
    m = re.search(r"-cp-(\d+)$", r.name)
    return int(m.group(1)) if m else 0


def _is_bootstrap(r: Recorded, index: int) -> bool:
    text = user_data(r)
    if text is not None and "CK8S_ROLE=" in text:
        return "CK8S_ROLE=bootstrap" in text
    return index == 0


def _pool_name(r: Recorded) -> str:
    tags = r.inputs.get("tags")
    if isinstance(tags, list):
        for tag in tags:
            if isinstance(tag, dict) and tag.get("key") == "ck8s-gpu/pool":
                return str(tag.get("value"))
    m = re.search(r"-pool-(.+?)(-asg)?$", r.name)
    return m.group(1) if m else r.name


_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")


def timeout_seconds(text: str) -> float:
    """An ASG's waitForCapacityTimeout (`20m`, `1h30m`, `0`) in seconds; "0": it does not wait."""
    if text.strip() == "0":
        return 0.0
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"waitForCapacityTimeout {text!r} is not a duration like 20m or 0")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def capacity_timeout(r: Recorded) -> float | None:
    """Seconds the ASG's create waits for its instances; None: the provider's default (10m)."""
    value = r.inputs.get("waitForCapacityTimeout")
    return timeout_seconds(value) if isinstance(value, str) else None


def block_waits(settings: Any, now: datetime) -> dict[str, float]:
    """Pool name -> seconds from `now` (the start of `up`) until its Capacity Block starts, for
    blocks that start later (`startsAt`; null: active already)."""
    out: dict[str, float] = {}
    for pool in getattr(settings, "node_pools", ()):
        cr = pool.capacity_reservation
        starts = cr.starts if cr is not None and cr.capacity_block else None
        if starts is None:
            continue
        wait = (starts - now).total_seconds()
        if wait > 0:
            out[pool.name] = wait
    return out


def nat_routes(custom: Iterable[Recorded]) -> list[str]:
    """The routes through NAT gateways: how a private node reaches the internet (Snap Store, registries)."""
    return [r.urn for r in custom if r.type == NAT_ROUTE_TYPE and r.inputs.get("natGatewayId")]


def api_reach(custom: Iterable[Recorded], internet: list[str]) -> list[str]:
    """What a node waits for before its script can call AWS's APIs: the stack's interface endpoints
    for them (components/aws/endpoints.py) where it makes any, else the NAT routes."""
    endpoints = [r.urn for r in custom if r.type == VPC_ENDPOINT and r.inputs.get("vpcEndpointType") == "Interface"
                 and str(r.inputs.get("serviceName", "")).rsplit(".", 1)[-1] in NODE_SCRIPT_APIS]
    return endpoints or internet


def build_steps(resources: list[Recorded], *, platform: str, driver_mode: str = "compiled",
                prefix: str = "", waits: Mapping[str, float] | None = None) -> list[Step]:
    """One step per planned custom resource plus the synthetic node and GPU Operator steps.

    `prefix` (e.g. `ck8s-dev-eu-west-1-`) is cut from step names to keep them short. `waits`:
    pool name -> seconds until its Capacity Block starts (`block_waits`)."""
    if driver_mode not in DRIVER_MODES:
        raise ValueError(f"driver_mode must be one of {', '.join(DRIVER_MODES)}, got {driver_mode!r}")
    by_urn = {r.urn: r for r in resources}
    children: dict[str, list[Recorded]] = {}
    for r in resources:
        children.setdefault(r.parent, []).append(r)
    providers = {r.name: r.urn for r in resources if r.type.startswith(tokens.PROVIDER_PREFIX)}
    deps: dict[str, set[str]] = {}
    steps: dict[str, Step] = {}
    order: list[str] = []

    def short(name: str) -> str:
        return name[len(prefix):] if prefix and name.startswith(prefix) else name

    def add(step_id: str, name: str, key: str, step_deps: Iterable[str], **kw: Any) -> str:
        steps[step_id] = Step(step_id, name, key, (), **kw)
        deps[step_id] = set(step_deps)
        order.append(step_id)
        return step_id

    def synthetic(name: str, key: str, step_deps: Iterable[str], **kw: Any) -> str:
        return add(f"synthetic:{name}", name, key, step_deps, **kw)

    for r in resources:
        if not r.custom:
            continue
        d = _expand(r.dependencies, by_urn, children)
        provider = providers.get(r.provider.rsplit("-", 1)[0]) if r.provider else None
        if provider is not None:
            d.add(provider)
        add(r.urn, short(r.name), step_key(r, platform), d, type=r.type,
            chart=chart_name(r) if r.type == RELEASE else "")

    custom = [r for r in resources if r.custom]
    internet = nat_routes(custom)
    apis = api_reach(custom, internet)
    media_of = {r.urn: node_media(user_data(r)) for r in custom if r.type in (INSTANCE, LAUNCH_TEMPLATE)}
    preloaded = bool(media_of) and all(m.images_preloaded for m in media_of.values())
    toolkit_mode = toolkit_mode_of(resources)
    if preloaded:
        # Every node carries every image: the rows whose ranges include pulls give way to their variants.
        for sid, st in steps.items():
            if st.key in PRELOADED_VARIANTS:
                steps[sid] = replace(st, key=PRELOADED_VARIANTS[st.key])

    def node(name: str, media: NodeMedia, launched: str, member: tuple[str, str],
             waits_for: list[str]) -> tuple[str, str]:
        """A node's first boot: boot, snap install, bootstrap or join (`member`: name, row), Ready."""
        boot = synthetic(f"{name} boot", "node-boot", [launched])
        if media.snap_from_image:  # from the image's disk: no Snap Store, so no NAT route to wait for
            snap = synthetic(f"{name} snap install", "snap-install-local", [boot])
        else:
            snap = synthetic(f"{name} snap install", "snap-install", [boot, *internet])
        # The script fetches its secrets (and a worker its token) from AWS's APIs before it starts k8s.
        begin = [snap, *waits_for, *apis]
        joined = synthetic(f"{name} {member[0]}", member[1], begin)
        ready_deps = [joined]
        # k8sd starts containerd in its bootstrap and join hooks (k8s-snap release-1.34
        # src/k8s/pkg/k8sd/app/cluster_util.go), and its side-load plugin imports the tarballs then.
        if media.images_preloaded:
            ready_deps.append(synthetic(f"{name} containerd side-load", "containerd-sideload", begin))
        elif not media.offline:
            ready_deps += internet  # Cilium's images come from their registries (a mirror: taken as reached alike)
        ready = synthetic(f"{name} node Ready", "node-ready-cni-preloaded" if media.images_preloaded
                          else "node-ready-cni", ready_deps)
        return joined, ready

    control_planes = sorted((r for r in custom if r.type == INSTANCE
                             and (r.inputs.get("tags") or {}).get("ck8s-gpu/role") == "control-plane"),
                            key=_cp_index)
    api_ready_of = {i.urn: [r for r in custom if r.type == API_READY and i.urn in deps[r.urn]]
                    for i in control_planes}
    members: list[str] = []  # bootstrap or join step per control plane, in join order
    bootstrapped = ""  # the bootstrap step: from then on a control plane mints worker tokens
    for cp in control_planes:
        n, name = _cp_index(cp), short(cp.name)
        first = _is_bootstrap(cp, n)
        # k8sd refuses a control-plane join while another one runs: one after another
        member, ready = node(name, media_of[cp.urn], cp.urn,
                             ("k8s bootstrap", "k8s-bootstrap") if first else ("k8s join", "k8s-join-control-plane"),
                             [] if first else members[-1:])
        members.append(member)
        healthy = ""
        for tga in (r for r in custom if r.type == TARGET_ATTACHMENT and cp.urn in deps[r.urn]):
            registered = synthetic(f"{name} NLB target registered", "nlb-target-registration", [tga.urn])
            healthy = synthetic(f"{name} NLB target healthy", "nlb-health-checks", [registered, member])
        for gate in api_ready_of[cp.urn]:  # the first API answer through the NLB needs a healthy target
            deps[gate.urn] |= {ready} | ({healthy} if healthy and first else set())
        if first:
            bootstrapped = member

    gpu_ready: list[str] = []
    # Autoscaled pools (ADR 0049) whose group holds no node: their nodes come for the smoke pods'
    # own claims, launched by Karpenter once its NodePools exist and the pods are pending.
    scaled = {np["metadata"]["name"] for r in custom if r.type == RELEASE and chart_name(r) == NODEPOOLS_CHART
              for np in (r.inputs.get("values") or {}).get("nodePools", [])}
    nodepools = [r.urn for r in custom if r.type == RELEASE and chart_name(r) == NODEPOOLS_CHART]
    smoke_charts = [r.urn for r in custom if r.type == RELEASE and chart_name(r) == SMOKE_CHART]
    on_demand: list[str] = []  # the Ready steps of nodes launched for the smoke pods
    for asg in (r for r in custom if r.type == ASG):
        name = f"pool {_pool_name(asg)}"
        if _pool_name(asg) in scaled and int(asg.inputs.get("desiredCapacity") or 0) == 0:
            template = next((d for d in sorted(deps[asg.urn]) if steps[d].type == LAUNCH_TEMPLATE), "")
            launch = synthetic(f"{name} autoscaler launch", "karpenter-launch", [*nodepools, *smoke_charts])
            running = synthetic(f"{name} instance running", "aws-asg-capacity", [launch])
            _, ready = node(name, media_of.get(template, NodeMedia()), running, ("k8s join", "k8s-join-worker"),
                            [bootstrapped] if bootstrapped else [])
            on_demand.append(ready)
            continue
        until = (waits or {}).get(_pool_name(asg))
        block = synthetic(f"{name} Capacity Block starts", "capacity-block-wait", [], seconds=until) if until else ""
        launched = asg.urn
        if capacity_timeout(asg) == 0:
            # The group's create returns once it exists; its instances launch after it (and,
            # on a block, once the block is active: AWS retries the launch until then).
            steps[asg.urn] = replace(steps[asg.urn], key="aws-api")
            launched = synthetic(f"{name} instances launch", "aws-asg-capacity", [asg.urn, *filter(None, [block])])
        elif block:
            deps[asg.urn].add(block)  # the create waits for instances: they come at the block's start
        template = next((d for d in sorted(deps[asg.urn]) if steps[d].type == LAUNCH_TEMPLATE), "")
        # The join loop waits for a control plane that answers the mint document (bootstrapped).
        _, ready = node(name, media_of.get(template, NodeMedia()), launched, ("k8s join", "k8s-join-worker"),
                        [bootstrapped] if bootstrapped else [])
        gpu_ready.append(ready)

    drivers: list[str] = []
    for wait in (r for r in custom if r.type == CLUSTER_POLICY_READY):
        driver = synthetic(f"GPU Operator driver ({driver_mode})", f"gpu-driver-{driver_mode}",
                           [*deps[wait.urn], *gpu_ready])
        drivers.append(driver)
        toolkit = synthetic(*(("GPU Operator container toolkit", "gpu-toolkit") if toolkit_mode == "operator" else
                              ("container toolkit (node image)", "gpu-toolkit-host")), [driver])
        validation = synthetic("GPU Operator validator", PRELOADED_VARIANTS["gpu-operator-validation"] if preloaded
                               else "gpu-operator-validation", [toolkit])
        deps[wait.urn].add(validation)
    plugins = [synthetic("DRA kubelet plugin publishes GPUs", "dra-plugin-start", [r.urn, *drivers, *gpu_ready])
               for r in custom if r.type == RELEASE and chart_name(r) == DRA_CHART]
    # On a node launched for the smoke pods the driver is the image's or the operator's DaemonSet
    # pod on that node: the plugin publishes after the node is Ready (and its driver, for the row).
    plugins += [synthetic(f"DRA kubelet plugin publishes GPUs ({steps[ready].name.removesuffix(' node Ready')})",
                          "dra-plugin-start", [ready, *drivers])
                for ready in on_demand if any(chart_name(r) == DRA_CHART for r in custom if r.type == RELEASE)]
    for run in (r for r in custom if r.type == SMOKE_RUN):
        deps[run.urn] |= {*gpu_ready, *on_demand, *plugins}  # the run first waits for every GPU node's slices

    return [replace(steps[i], deps=tuple(sorted(deps[i] & steps.keys()))) for i in order]


# --------------------------------------------------------------------------------------------
# schedule and critical path


Interval = tuple[float, float]  # start, finish


def topological(steps: Iterable[Step]) -> list[Step]:
    by_id = {s.id: s for s in steps}
    done: set[str] = set()
    out: list[Step] = []
    visiting: set[str] = set()

    def visit(s: Step) -> None:
        if s.id in done:
            return
        if s.id in visiting:
            raise ValueError(f"dependency cycle through {s.name}")
        visiting.add(s.id)
        for d in s.deps:
            if d in by_id:
                visit(by_id[d])
        visiting.discard(s.id)
        done.add(s.id)
        out.append(s)

    for s in sorted(by_id.values(), key=lambda s: s.id):
        visit(s)
    return out


def _descendants(steps: Mapping[str, Step], root: str) -> set[str]:
    """Every step that waits, through any chain, on `root`."""
    waiting: dict[str, set[str]] = {}
    for s in steps.values():
        for d in s.deps:
            waiting.setdefault(d, set()).add(s.id)
    out: set[str] = set()
    todo = [root]
    while todo:
        for nxt in waiting.get(todo.pop(), ()):
            if nxt not in out:
                out.add(nxt)
                todo.append(nxt)
    return out


def schedule(steps: Iterable[Step], bound: str) -> dict[str, Interval]:
    """Earliest start and finish of every step, all durations at their `low` or `high` bound."""
    out: dict[str, Interval] = {}
    for s in topological(steps):
        start = max((out[d][1] for d in s.deps if d in out), default=0.0)
        out[s.id] = (start, start + float(getattr(s.duration, bound)))
    return out


def critical_path(steps: Mapping[str, Step], times: Mapping[str, Interval], end: str) -> list[str]:
    """The chain that decides `end`'s finish: from `end`, always the dependency finishing last."""
    path = [end]
    while True:
        current = steps[path[-1]]
        if not current.deps:
            break
        # Latest finish wins; ties go to the longer step, then to a stable order.
        path.append(max(current.deps, key=lambda d: (times[d][1], times[d][1] - times[d][0], d)))
    return path[::-1]


@dataclass
class Timeline:
    stack: str
    steps: dict[str, Step]
    low: dict[str, Interval]
    high: dict[str, Interval]
    end: str
    path: list[str]  # by upper bounds
    path_low: list[str]  # by lower bounds
    driver_mode: str = "compiled"
    prefix: str = ""  # cut from the names of the stack's resources
    what_ifs: list[WhatIfResult] = field(default_factory=list)
    # What must exist before `pulumi up` and is not on its path (a pool's driver image, built ahead).
    prerequisites: list[str] = field(default_factory=list)
    # What makes the modeled `up` fail or wait (a Capacity Block starting after the ASG's timeout).
    warnings: list[str] = field(default_factory=list)
    # Each node's boot media (control plane or pool, names as in the steps), from its user-data.
    media: dict[str, NodeMedia] = field(default_factory=dict)

    @property
    def total(self) -> tuple[float, float]:
        return self.low[self.end][1], self.high[self.end][1]

    @property
    def dominating(self) -> Step:
        """The step on the critical path with the largest upper bound."""
        return max((self.steps[i] for i in self.path), key=lambda s: (s.duration.high, s.duration.low, s.id))

    def beside(self, step_id: str) -> list[Step]:
        """Steps off the critical path that run at the same time (upper-bound schedule), longest first."""
        start, finish = self.high[step_id]
        on_path = set(self.path)
        overlapping = [s for s in self.steps.values() if s.id not in on_path and s.duration.high > 0
                       and min(finish, self.high[s.id][1]) - max(start, self.high[s.id][0]) > 0]
        return sorted(overlapping, key=lambda s: (-s.duration.high, s.name))

    def scale_from_zero(self) -> list[tuple[str, tuple[float, float]]]:
        """Per autoscaler launch (a pool autoscaled from zero): (pool, the time from the launch step's
        start, with the smoke pods pending, to the smoke pass), low and high. What a queued GPU job
        waits for a node that does not exist yet (ADR 0049; the issue's goal: at most 5 minutes)."""
        out = []
        end = self.steps[self.end]
        for s in sorted(self.steps.values(), key=lambda s: s.name):
            if s.key != "karpenter-launch":
                continue
            sub = {i: self.steps[i] for i in _descendants(self.steps, s.id) | {s.id}}
            # scheduled alone: everything else the smoke run waits for is taken as done already
            low, high = schedule(list(sub.values()), "low"), schedule(list(sub.values()), "high")
            if end.id in sub:
                out.append((s.name.removesuffix(" autoscaler launch").removeprefix("pool "),
                             (low[end.id][1], high[end.id][1])))
        return out

    def estimates_on_path(self) -> list[Step]:
        return [self.steps[i] for i in self.path if self.steps[i].duration.kind == "estimate"]

    def nat_on_path(self, bound: str = "high") -> list[Step]:
        """NAT gateways on the critical path by `bound` (high: upper bounds, low: lower bounds)."""
        return [self.steps[i] for i in (self.path if bound == "high" else self.path_low)
                if self.steps[i].key == "aws-nat"]


def make_timeline(stack: str, steps: list[Step], driver_mode: str = "compiled", prefix: str = "") -> Timeline:
    by_id = {s.id: s for s in steps}
    ends = [s.id for s in steps if s.type == SMOKE_RUN]
    if len(ends) != 1:
        raise ValueError(f"stack {stack}: expected one smoke run ({SMOKE_RUN}) to end the timeline, found {len(ends)}")
    low, high = schedule(steps, "low"), schedule(steps, "high")
    return Timeline(stack, by_id, low, high, ends[0], critical_path(by_id, high, ends[0]),
                    critical_path(by_id, low, ends[0]), driver_mode, prefix)


@dataclass(frozen=True)
class WhatIf:
    name: str
    change: str  # the graph change, in words
    apply: Callable[[list[Step]], list[Step]]


@dataclass(frozen=True)
class WhatIfResult:
    what_if: WhatIf
    total: tuple[float, float]
    saved: tuple[float, float]  # against the plan as it is
