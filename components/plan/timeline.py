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
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import yaml

from ..settings.platforms import traits
from .artifacts import RELEASE, local_chart, user_data
from .clock import clock
from .durations import DURATIONS, PRELOADED_VARIANTS, Duration
from .mockengine import Recorded
from .run import Plan

SMOKE_RUN = "pulumi-python:dynamic/ck8s-gpu:SmokeRun"
API_READY = "pulumi-python:dynamic/ck8s-gpu:ApiReady"
WAIT_FOR = "pulumi-python:dynamic/ck8s-gpu:WaitFor"
CLUSTER_POLICY_READY = "pulumi-python:dynamic/ck8s-gpu:ClusterPolicyReady"
INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NLB = "aws:lb/loadBalancer:LoadBalancer"
TARGET_ATTACHMENT = "aws:lb/targetGroupAttachment:TargetGroupAttachment"
NODE_UPGRADE = "pulumi-python:dynamic/ck8s-gpu:NodeUpgrade"
NAT_ROUTE_TYPE = "aws:ec2/route:Route"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
# AWS APIs components/aws/scripts/ck8s-node.sh calls before its bootstrap or join: Secrets Manager
# (PKI, join auth), Elastic Load Balancing (the API's name), EC2 (peers), SSM (a worker's token).
NODE_SCRIPT_APIS = ("secretsmanager", "elasticloadbalancing", "ec2", "ssm")
DRIVER_MODES = ("compiled", "precompiled", "host")
DRA_CHART = "dra-driver-nvidia-gpu"

_AWS_KEYS = {
    "aws:ec2/vpc:Vpc": "aws-vpc",
    "aws:ec2/subnet:Subnet": "aws-subnet",
    "aws:ec2/route:Route": "aws-route",
    "aws:ec2/routeTable:RouteTable": "aws-route",
    "aws:ec2/routeTableAssociation:RouteTableAssociation": "aws-route",
    "aws:ec2/internetGateway:InternetGateway": "aws-igw",
    "aws:ec2/eip:Eip": "aws-eip",
    "aws:ec2/natGateway:NatGateway": "aws-nat",
    "aws:ec2/securityGroup:SecurityGroup": "aws-sg",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "aws-sg-rule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "aws-sg-rule",
    LAUNCH_TEMPLATE: "aws-launch-template",
    "aws:kms/key:Key": "aws-kms-key",
    NLB: "aws-nlb",
    INSTANCE: "aws-ec2-running",
    ASG: "aws-asg-capacity",
}
_DYNAMIC_KEYS = {
    API_READY: "api-ready-poll",
    WAIT_FOR: "wait-for-poll",
    CLUSTER_POLICY_READY: "wait-for-poll",  # first install: fresh at once, no settle window
    NODE_UPGRADE: "upgrade-noop",
    "pulumi-python:dynamic/ck8s-gpu:PoolUpgrade": "upgrade-noop",
    "pulumi-python:dynamic/ck8s-gpu:UpgradeComplete": "upgrade-noop",
    "pulumi-python:dynamic/ck8s-gpu:CrdsFirst": "crds-first",
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


@dataclass(frozen=True)
class NodeMedia:
    """What a node boots with, as its user-data's env file says (components/aws/userdata.py):
    `CK8S_SNAP_SOURCE=image|store` (image: `snap ack` + `snap install ./k8s_<rev>.snap` from the
    AMI's disk), `CK8S_IMAGES_PRELOADED=1|0` (containerd side-loads the AMI's tarballs),
    `CK8S_OFFLINE=1|0`, `CK8S_REGISTRY_MIRROR=<host/path or empty>`. Absent: store, pulled, online."""

    snap_from_image: bool = False
    images_preloaded: bool = False
    offline: bool = False
    mirror: str = ""


_MEDIA_VALUES = {"CK8S_SNAP_SOURCE": ("image", "store"), "CK8S_IMAGES_PRELOADED": ("1", "0"),
                 "CK8S_OFFLINE": ("1", "0")}
_ASSIGNMENT = re.compile(r"^(?:export\s+)?(CK8S_[A-Z0-9_]+)=(.*)$")


def _env_texts(text: str) -> list[str]:
    """The env files of a cloud-config (write_files ending `.env`), else the text itself (a script)."""
    if text.startswith("#cloud-config"):
        doc = yaml.safe_load(text)
        files = doc.get("write_files") if isinstance(doc, dict) else None
        return [str(f.get("content", "")) for f in files or []
                if isinstance(f, dict) and str(f.get("path", "")).endswith(".env")]
    return [text]


def env_assignments(text: str) -> dict[str, str]:
    """`CK8S_*=value` lines of a node's env file; values the shell would expand (`$`) are skipped."""
    out: dict[str, str] = {}
    for env in _env_texts(text):
        for line in env.splitlines():
            m = _ASSIGNMENT.match(line.strip())
            if m is None or "$" in m.group(2):
                continue
            words = shlex.split(m.group(2))
            out[m.group(1)] = words[0] if words else ""
    return out


def node_media(text: str | None) -> NodeMedia:
    """A node's media from its decoded user-data; None (no user-data, or a secret one): the store
    and registries, as before node images carried them. A value outside the contract is refused."""
    env = env_assignments(text) if text else {}
    bad = [f"{k}={env[k]!r} (expected {' or '.join(allowed)})" for k, allowed in _MEDIA_VALUES.items()
           if k in env and env[k] not in allowed]
    if bad:
        raise ValueError("node user-data: " + "; ".join(bad))
    m = NodeMedia(env.get("CK8S_SNAP_SOURCE") == "image", env.get("CK8S_IMAGES_PRELOADED") == "1",
                  env.get("CK8S_OFFLINE") == "1", env.get("CK8S_REGISTRY_MIRROR", ""))
    # components/settings/offline_rules.py refuses these stacks; a user-data saying so is not one of ours.
    if m.offline and not m.snap_from_image:
        raise ValueError("node user-data: CK8S_OFFLINE=1 with CK8S_SNAP_SOURCE=store (an offline node cannot reach "
                         "the Snap Store)")
    if m.offline and not m.images_preloaded:
        raise ValueError("node user-data: CK8S_OFFLINE=1 with CK8S_IMAGES_PRELOADED=0 (offline nodes carry every "
                         "image)")
    return m


def describe_media(m: NodeMedia) -> str:
    snap = "snap from the image" if m.snap_from_image else "snap from the Snap Store"
    images = ("images preloaded (containerd side-loads them)" if m.images_preloaded
              else f"images pulled from {m.mirror or 'their registries'}")
    return ", ".join([snap, images, *(["offline"] if m.offline else [])])


# --------------------------------------------------------------------------------------------
# resources -> steps


def chart_name(r: Recorded) -> str:
    """A release's chart without repository or path (`oci://.../kai-scheduler` -> `kai-scheduler`)."""
    chart = r.inputs.get("chart")
    return chart.rstrip("/").rsplit("/", 1)[-1] if isinstance(chart, str) else ""


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
    if t.startswith("pulumi:providers:"):
        return "provider"
    if t.startswith(("tls:", "random:")):
        return "local-compute"
    if t == "command:local:Command" and platform == "kind":
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
    providers = {r.name: r.urn for r in resources if r.type.startswith("pulumi:providers:")}
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
    for asg in (r for r in custom if r.type == ASG):
        name = f"pool {_pool_name(asg)}"
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
    for run in (r for r in custom if r.type == SMOKE_RUN):
        deps[run.urn] |= {*gpu_ready, *plugins}  # the run first waits for every GPU node's slices

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


# --------------------------------------------------------------------------------------------
# what-ifs: dependencies a first `pulumi up` does not need


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


def _driver(mode: str) -> Callable[[list[Step]], list[Step]]:
    def apply(steps: list[Step]) -> list[Step]:
        return [replace(s, key=f"gpu-driver-{mode}", name=re.sub(r"\(\w+\)$", f"({mode})", s.name))
                if s.key.startswith("gpu-driver-") else s for s in steps]
    return apply


def driver_mode_totals(tl: Timeline) -> dict[str, tuple[float, float]]:
    """The same graph with each driver mode: what choosing it alone does to the modeled time."""
    steps = list(tl.steps.values())
    return {mode: make_timeline(tl.stack, _driver(mode)(steps)).total for mode in ("compiled", "precompiled", "host")}


WHAT_IFS: tuple[WhatIf, ...] = (
    WhatIf("precompiled-driver", "settings gpuStack.driver: precompiled (the GPU Operator pulls a driver built "
           "for the node's kernel; only for kernels NVIDIA publishes, docs/adr/0018)", _driver("precompiled")),
    WhatIf("host-driver", "settings gpuStack.driver: host (the driver is in the GPU pools' image, built "
           "ahead by the image program: docs/images.md, docs/adr/0020)", _driver("host")),
)


def what_if_results(stack: str, steps: list[Step], base: tuple[float, float]) -> list[WhatIfResult]:
    """Each what-if that shortens the modeled time, alone (they are alternatives: the driver modes
    exclude each other, so no "all of them" line)."""
    results = []
    for w in WHAT_IFS:
        total = make_timeline(stack, w.apply(steps)).total
        if total[1] >= base[1]:  # only what shortens it (a mode already chosen changes nothing)
            continue
        results.append(WhatIfResult(w, total, (base[0] - total[0], base[1] - total[1])))
    return results


# --------------------------------------------------------------------------------------------
# from a plan


def _operator_values(resources: Iterable[Recorded], key: str) -> dict[str, Any]:
    """`values.<key>` of the GPU Operator's release ({} without the release or the key)."""
    for r in resources:
        if r.type == RELEASE and chart_name(r) == "gpu-operator":
            section = (r.inputs.get("values") or {}).get(key) or {}
            return section if isinstance(section, dict) else {}
    return {}


def driver_mode_of(resources: list[Recorded], settings_driver: str) -> str:
    """settings.gpuStack.driver (`operator` compiles on the node), or what the operator's values say."""
    if settings_driver in ("host", "precompiled"):
        return settings_driver
    return "precompiled" if _operator_values(resources, "driver").get("usePrecompiled") is True else "compiled"


def toolkit_mode_of(resources: Iterable[Recorded]) -> str:
    """`host` where the GPU Operator's release turns its toolkit off (the node image carries it:
    gpuStack.toolkit host, components/addons/gpu_operator.py toolkit_values), else `operator`."""
    return "host" if _operator_values(resources, "toolkit").get("enabled") is False else "operator"


def block_warnings(tl: Timeline, resources: list[Recorded]) -> list[str]:
    """ASGs whose create waits for capacity that their Capacity Block delivers only after the
    wait's timeout: the create fails (pulumi-aws: "timeout while waiting for state to become
    InService"), and `up` with it."""
    out = []
    by_urn = {r.urn: r for r in resources}
    for step in tl.steps.values():
        blocks = [d for d in step.deps if tl.steps[d].key == "capacity-block-wait"]
        if step.type != ASG or not blocks:
            continue
        timeout = capacity_timeout(by_urn[step.id])
        timeout = 600.0 if timeout is None else timeout  # pulumi-aws' default wait_for_capacity_timeout
        own = [d for d in step.deps if d not in blocks]
        start = max((tl.low[d][1] for d in own), default=0.0)  # the earliest the create can begin
        starts = tl.low[blocks[0]][1]
        if starts - start > timeout:
            out.append(f"{step.name}: its Capacity Block starts {clock(starts)} after `up` begins, "
                       f"{clock(starts - start)} after the group's create at the earliest, past its "
                       f"waitForCapacityTimeout {clock(timeout)}: the create fails. A group on a later block must "
                       f"not wait (waitForCapacityTimeout \"0\"), or run `up` after the start")
    return out


def node_media_by_name(resources: list[Recorded], prefix: str = "") -> dict[str, NodeMedia]:
    """Control planes (`cp-0`) and pools (`pool l4`, through their launch template) -> boot media."""
    by_urn = {r.urn: r for r in resources}
    out: dict[str, NodeMedia] = {}
    for r in sorted((r for r in resources if r.custom and r.type == INSTANCE
                     and (r.inputs.get("tags") or {}).get("ck8s-gpu/role") == "control-plane"), key=_cp_index):
        out[r.name[len(prefix):] if prefix and r.name.startswith(prefix) else r.name] = node_media(user_data(r))
    # Pools by name: the engine registers them in parallel, in no fixed order.
    for asg in sorted((r for r in resources if r.custom and r.type == ASG), key=_pool_name):
        template = next((by_urn[d] for d in sorted(asg.dependencies)
                         if d in by_urn and by_urn[d].type == LAUNCH_TEMPLATE), None)
        out[f"pool {_pool_name(asg)}"] = node_media(user_data(template)) if template is not None else NodeMedia()
    return out


def timeline_for_plan(plan: Plan, now: datetime | None = None) -> Timeline:
    """The timeline of a `components.plan.run.Plan`, with its what-ifs. `now`: when `up` would
    start (a Capacity Block's wait is measured from it); None: the clock."""
    settings = plan.settings
    mode = driver_mode_of(plan.resources, settings.gpu_stack.driver)
    prefix = f"{settings.cluster_name}-" if settings.platform == "aws" else ""
    waits = block_waits(settings, now or datetime.now(UTC))
    steps = build_steps(plan.resources, platform=settings.platform, driver_mode=mode, prefix=prefix, waits=waits)
    tl = make_timeline(plan.stack, steps, mode, prefix)
    tl.warnings = block_warnings(tl, plan.resources)
    tl.media = node_media_by_name(plan.resources, prefix)
    tl.what_ifs = what_if_results(plan.stack, steps, tl.total)
    if mode == "host" and settings.platform == "aws":
        tl.prerequisites = [
            f"pool {pool.name} boots {pool.ami} with the driver inside, built ahead by the image program "
            "(`pulumi up -C images`, docs/images.md; paid once per image, not per cluster)"
            for pool in settings.node_pools if pool.ami]
    return tl
