"""Runs an upgrade or a replacement node by node, deciding each step from what the cluster says.

Every command goes through a `Runner` (one argv on one instance, as root: SSM RunShellScript on
AWS, the k8s-snap fake in tests). Kubernetes is read and changed with the snap's own kubectl on a
control plane (`k8s kubectl`, admin.conf), so the operator needs no route to a private API.

Nothing is remembered between runs: each step first reads the cluster (kubelet version, cordon,
our label), so a run interrupted anywhere resumes by running again (ADR 0015).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..settings.model import SnapPinSettings, UpgradeSettings
from . import kubeview, skew
from .kubeview import UPGRADE_LABEL, NodeView

Role = Literal["control-plane", "worker"]
POLL_SECONDS = 10.0
# k8sd re-applies its features once every node is upgraded: up to 10 min for the feature
# controller, then 2 min per feature, 7 features (k8s-snap pkg/k8sd/app/app.go,
# controllers/upgrade/reconcile.go).
FEATURE_UPGRADE_SECONDS = 10 * 60 + 7 * 2 * 60


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


class Runner(Protocol):
    def run(self, instance_id: str, argv: Sequence[str], timeout: float) -> Result: ...


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class NodeRef:
    instance_id: str
    name: str
    role: Role
    pool: str | None = None
    arch: str = "amd64"  # which of kubernetes.snap's revisions it installs (ADR 0039)


class UpgradeStopped(Exception):
    """The operation stopped on purpose; `str()` names the node, the step and what to do."""

    def __init__(self, node: str, step: str, reason: str) -> None:
        self.node, self.step, self.reason = node, step, reason
        super().__init__(f"{node}: {step}: {reason}")


@dataclass
class Outcome:
    node: str
    result: Literal["upgraded", "already", "skipped", "removed"]
    detail: str = ""


def _shown(argv: Sequence[str]) -> str:
    """The command as an operator would type it: a projection pipeline shows its kubectl part."""
    if list(argv[:2]) == ["sh", "-c"]:
        return argv[2].split(" | python3", 1)[0]
    return shlex.join(argv)


def _tail(text: str, lines: int = 4) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " / ".join(kept)[:600]


@dataclass
class Operator:
    """Upgrade and replacement steps over one cluster's nodes."""

    runner: Runner
    control_planes: Sequence[NodeRef]
    policy: UpgradeSettings = field(default_factory=UpgradeSettings)
    clock: Clock = field(default_factory=WallClock)
    log: Callable[[str], None] = lambda _line: None
    poll_seconds: float = POLL_SECONDS
    # settings.kubernetes.snap: nodes go to exactly that version (and revision of their
    # architecture), also within a track; None: to whatever the track's channel serves.
    snap: SnapPinSettings | None = None

    # ------------------------------------------------------------------ primitives

    def _run(self, on: NodeRef, argv: Sequence[str], step: str, node: str, timeout: float = 300) -> Result:
        result = self.runner.run(on.instance_id, argv, timeout)
        if result.code != 0:
            raise UpgradeStopped(node, step, f"`{_shown(argv)}` on {on.name} exited {result.code}: "
                                             f"{_tail(result.stderr or result.stdout)}")
        return result

    def _kubectl(self, via: NodeRef, *args: str, node: str, step: str, timeout: float = 120) -> Result:
        return self._run(via, ["k8s", "kubectl", *args], step, node, timeout)

    def _reach(self, node: str) -> tuple[NodeRef, dict[str, NodeView] | None]:
        """A control plane other than `node` whose k8s answers, with what it said of the control planes
        and `node` (the probe is the read). The only control plane is returned unasked (None): it may
        be the node refreshing, whose API is down for a while."""
        for cp in self.control_planes:
            if cp.name == node:
                continue
            result = self.runner.run(cp.instance_id, kubeview.nodes_command([node or cp.name]), 120)
            if result.code == 0:
                return cp, self._views(result.stdout, node)
        if len(self.control_planes) == 1:
            return self.control_planes[0], None
        raise UpgradeStopped(node, "find a control plane", "no other control plane answers `k8s kubectl`")

    def _via(self, avoid: str) -> NodeRef:
        return self._reach(avoid)[0]

    def _read(self, node: str) -> tuple[NodeRef, dict[str, NodeView]]:
        """A control plane to act from, and the control planes and `node` as the API server sees them."""
        via, views = self._reach(node)
        return via, views if views is not None else self.nodes(via, node)

    @staticmethod
    def _views(text: str, node: str) -> dict[str, NodeView]:
        try:
            return kubeview.nodes(text)
        except kubeview.ViewError as exc:
            raise UpgradeStopped(node or "cluster", "read nodes", str(exc)) from None

    def nodes(self, via: NodeRef, node: str) -> dict[str, NodeView]:
        """The control planes and `node` (every node when empty), as the API server sees them."""
        out = self._run(via, kubeview.nodes_command([node] if node else []), "read nodes", node or "cluster", 120)
        return self._views(out.stdout, node)

    # ------------------------------------------------------------------ checks

    def _preflight(self, node: NodeRef, target: int, views: dict[str, NodeView]) -> None:
        cps = [v for v in views.values() if v.control_plane]
        others = [v for v in cps if v.name != node.name]
        if node.role == "control-plane":
            problems = skew.apiserver_problems([target, *(v.minor for v in others)])
            down = [v.name for v in others if not v.ready]
            if len(cps) >= 3 and down:
                problems.append(f"control plane(s) {', '.join(down)} not Ready: taking {node.name} down too would "
                                "leave etcd without a majority")
        else:
            problems = skew.kubelet_problems(target, [v.minor for v in cps])
        if problems:
            raise UpgradeStopped(node.name, "version skew and quorum check", "; ".join(problems))

    # ------------------------------------------------------------------ steps

    def cordon(self, via: NodeRef, node: NodeRef, view: NodeView) -> bool:
        """Cordon and label the node (`view`: as just read); False when an operator had cordoned it
        (we leave it so)."""
        if view.unschedulable and not view.held_by_upgrade:
            self.log(f"{node.name}: already cordoned by someone else; it stays cordoned afterwards")
            return False
        self._kubectl(via, "label", "node", node.name, f"{UPGRADE_LABEL}=cordoned", "--overwrite",
                      node=node.name, step="cordon")
        self._kubectl(via, "cordon", node.name, node=node.name, step="cordon")
        return True

    def release(self, via: NodeRef, node: NodeRef, ours: bool) -> None:
        if ours:
            self._kubectl(via, "uncordon", node.name, node=node.name, step="uncordon")
            self._kubectl(via, "label", "node", node.name, f"{UPGRADE_LABEL}-", node=node.name, step="uncordon")

    def wait_for_gpu_jobs(self, via: NodeRef, node: NodeRef) -> None:
        """Running GPU Job pods finish before the drain, up to `jobGraceSeconds` (then evicted)."""
        deadline = self.clock.now() + self.policy.job_grace_seconds
        while True:
            out = self._run(via, kubeview.gpu_job_pods_command(node.name), "wait for GPU jobs", node.name, 120)
            running = kubeview.gpu_job_pods(out.stdout)
            if not running:
                return
            if self.clock.now() >= deadline:
                self.log(f"{node.name}: GPU job pods still running after {self.policy.job_grace_seconds}s, evicting: "
                         f"{', '.join(running)}")
                return
            self.log(f"{node.name}: waiting for GPU job pods to finish: {', '.join(running)}")
            self.clock.sleep(self.poll_seconds)

    def drain(self, via: NodeRef, node: NodeRef) -> bool:
        """True when drained; False when skipped by policy; raises when the policy says stop."""
        base = ["drain", node.name, "--ignore-daemonsets", "--delete-emptydir-data",
                f"--timeout={self.policy.drain_timeout_seconds}s"]
        timeout = self.policy.drain_timeout_seconds + 120
        first = self.runner.run(via.instance_id, ["k8s", "kubectl", *base], timeout)
        if first.code == 0:
            return True
        reason = _tail(first.stderr or first.stdout)
        policy = self.policy.on_drain_failure
        if policy == "skip":
            self.log(f"{node.name}: will not drain ({reason}); skipped, left on its old version (onDrainFailure: skip)")
            return False
        if policy == "force":
            self.log(f"{node.name}: will not drain ({reason}); deleting its pods anyway (onDrainFailure: force)")
            self._kubectl(via, *base, "--disable-eviction", "--force", node=node.name, step="drain (forced)",
                          timeout=timeout)
            return True
        raise UpgradeStopped(node.name, "drain", f"{reason}. The node stays cordoned. Free it (PodDisruptionBudget, "
                                                 "long job) and run the upgrade again, or set "
                                                 "kubernetes.upgrade.onDrainFailure to skip or force")

    def _at_target(self, view: NodeView, target: int) -> bool:
        return view.minor == target and (self.snap is None or view.kubelet_version == self.snap.version)

    def refresh(self, node: NodeRef, track: str) -> None:
        argv = ["snap", "refresh", "k8s", f"--channel={track}/stable"]
        if self.snap is not None:
            revision = self.snap.revisions.get(node.arch)  # type: ignore[call-overload]
            if revision is None:
                raise UpgradeStopped(node.name, "snap refresh", f"no revision for {node.arch} in kubernetes.snap."
                                                                f"revisions: add {node.arch}'s (ADR 0039)")
            argv.append(f"--revision={revision}")
        self._run(node, argv, "snap refresh", node.name, 900)

    def wait_ready(self, via: NodeRef, node: NodeRef, target: int) -> None:
        deadline = self.clock.now() + self.policy.node_ready_timeout_seconds
        last = "not read yet"
        while self.clock.now() < deadline:
            result = self.runner.run(via.instance_id, kubeview.nodes_command([node.name]), 60)
            if result.code == 0:
                try:
                    view = kubeview.nodes(result.stdout).get(node.name)
                except kubeview.ViewError as exc:
                    raise UpgradeStopped(node.name, "wait for Ready", str(exc)) from None
                if view is not None and view.ready and self._at_target(view, target):
                    return
                last = "missing" if view is None else f"{view.kubelet_version}, Ready={view.ready}"
            else:
                last = _tail(result.stderr)  # the API restarts with a single control plane
            self.clock.sleep(self.poll_seconds)
        on = self.snap.version if self.snap is not None else f"1.{target}"
        raise UpgradeStopped(node.name, "wait for Ready", f"not Ready on {on} after "
                                                          f"{self.policy.node_ready_timeout_seconds}s (last: {last})")

    # ------------------------------------------------------------------ operations

    def upgrade_nodes(self, batch: Sequence[NodeRef], track: str) -> list[Outcome]:
        """Upgrade a batch in place: at most len(batch) nodes out of service at once."""
        target = skew.minor(track)
        outcomes: list[Outcome] = []
        todo: list[tuple[NodeRef, bool]] = []
        for node in batch:
            via, views = self._read(node.name)
            view = views.get(node.name)
            if view is None:  # launched, not joined yet: it joins on what its launch template says
                self.log(f"{node.name}: no Node yet (still joining); left to join by itself")
                outcomes.append(Outcome(node.name, "skipped", "not joined yet"))
                continue
            if self._at_target(view, target):
                if view.held_by_upgrade:  # interrupted after the refresh: finish the node
                    self.release(via, node, True)
                outcomes.append(Outcome(node.name, "already", view.kubelet_version))
                continue
            self._preflight(node, target, views)
            self.log(f"{node.name}: {view.kubelet_version} -> {track}")
            ours = self.cordon(via, node, view)
            self.wait_for_gpu_jobs(via, node)
            if not self.drain(via, node):
                self.release(via, node, ours)
                outcomes.append(Outcome(node.name, "skipped", "did not drain"))
                continue
            todo.append((node, ours))
        for node, _ in todo:
            self.refresh(node, track)
        for node, ours in todo:
            via = self._via(node.name)
            self.wait_ready(via, node, target)
            self.release(via, node, ours)
            self.log(f"{node.name}: Ready on {track}")
            outcomes.append(Outcome(node.name, "upgraded", track))
        return outcomes

    def upgrade_control_planes(self, track: str) -> list[Outcome]:
        """One at a time, each back Ready on the new minor before the next starts."""
        out: list[Outcome] = []
        for cp in self.control_planes:
            out += self.upgrade_nodes([cp], track)
        return out

    def upgrade_pool(self, workers: Sequence[NodeRef], track: str) -> list[Outcome]:
        out: list[Outcome] = []
        step = self.policy.max_unavailable
        for i in range(0, len(workers), step):
            out += self.upgrade_nodes(workers[i:i + step], track)
        return out

    def finish(self, pools: Mapping[str, Sequence[NodeRef]], track: str,
               timeout: float = FEATURE_UPGRADE_SECONDS) -> list[Outcome]:
        """The last step: any pool node still on the old minor (one that joined from the old launch
        template while the control planes were upgraded) is upgraded too, then k8sd's Upgrade must
        complete. Run again after a failure, it picks up exactly what is left."""
        out: list[Outcome] = []
        for workers in pools.values():
            out += self.upgrade_pool(workers, track)
        out.append(Outcome("cluster", "upgraded", self.wait_upgrade_completed(track, timeout)))
        return out

    def wait_upgrade_completed(self, track: str, timeout: float = FEATURE_UPGRADE_SECONDS) -> str:
        """k8sd's own record: the newest Upgrade to this minor reaches Completed (every Node counted,
        features re-applied). Stuck in NodeUpgrade, the message names the nodes it still waits for."""
        target = skew.minor(track)
        # pkg/upgrade/upgrade.go GetName: cluster-upgrade-to-k8s-<version>-rev-<revision>
        mark = f"-k8s-{self.snap.version.lstrip('v')}-rev-" if self.snap is not None else f"-k8s-1.{target}."
        via = self._via("")
        deadline = self.clock.now() + timeout
        last = "no Upgrade seen"
        while True:
            out = self._run(via, kubeview.upgrades_command(), "read k8sd upgrades", "cluster", 120)
            try:
                ups = [u for u in kubeview.upgrades(out.stdout) if mark in u.name]
            except kubeview.ViewError as exc:
                raise UpgradeStopped("cluster", "read k8sd upgrades", str(exc)) from None
            if ups and ups[-1].phase == "Completed":
                return ups[-1].name
            if ups:
                u = ups[-1]
                waiting = sorted(set(self.nodes(via, "").keys()) - set(u.upgraded_nodes))
                last = f"{u.name} in phase {u.phase}" + (f", not yet counted: {', '.join(waiting)}" if waiting else "")
            if self.clock.now() >= deadline:
                raise UpgradeStopped("cluster", "k8sd upgrade completion", f"{last} after {int(timeout)}s; a node "
                                     "left on the old minor (onDrainFailure: skip) keeps it open")
            self.clock.sleep(self.poll_seconds)

    def remove_control_plane(self, node: NodeRef, *, force: bool = False) -> Outcome:
        """Take a control plane out of the membership before its instance goes (replacement)."""
        if len(self.control_planes) < 2 and not force:
            raise UpgradeStopped(node.name, "replace", "it is the only control plane: its datastore holds every object "
                                                       "of the cluster and would be lost. Rebuild from backup "
                                                       "(docs/runbooks/dr-rebuild.md), or pass --force to replace it "
                                                       "and start an empty cluster")
        if len(self.control_planes) < 2:
            return Outcome(node.name, "removed", "forced: the only control plane; nothing to leave")
        via, views = self._read(node.name)
        down = [v.name for v in views.values() if v.control_plane and v.name != node.name and not v.ready]
        if down:
            raise UpgradeStopped(node.name, "quorum check", f"control plane(s) {', '.join(down)} not Ready: removing "
                                                            f"{node.name} now would leave etcd without a majority")
        if node.name in views:
            ours = self.cordon(via, node, views[node.name])
            if not self.drain(via, node):
                self.release(via, node, ours)
                raise UpgradeStopped(node.name, "drain", "did not drain; nothing was removed")
        self._run(via, ["k8s", "remove-node", node.name], "remove from the cluster", node.name)
        return Outcome(node.name, "removed", f"via {via.name}")

    def remove_worker(self, node: NodeRef) -> Outcome:
        """Cordon and drain a worker, then delete its Node (its instance is terminated by the caller)."""
        via, views = self._read(node.name)
        if node.name in views:
            ours = self.cordon(via, node, views[node.name])
            self.wait_for_gpu_jobs(via, node)
            if not self.drain(via, node):
                self.release(via, node, ours)
                raise UpgradeStopped(node.name, "drain", "did not drain; nothing was removed")
        return Outcome(node.name, "removed", "drained")

    def forget_node(self, node: NodeRef) -> None:
        """Delete a terminated worker's Node object (k8s remove-node: a missing Node is no error)."""
        via = self._via(node.name)
        self._run(via, ["k8s", "remove-node", node.name], "remove from the cluster", node.name)
