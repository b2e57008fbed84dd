"""The executor's two boundaries over the k8s-snap fake: commands run on a simulated instance as
SSM RunShellScript would, and a clock that is the fake world's (sleeping advances it)."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.upgrade.executor import NodeRef, Result
from tests.fakes.k8s_snap import world
from tests.fakes.k8s_snap.fleet import Fleet, Instance
from tests.fakes.k8s_snap.k8sd_server import Supervisor
from tests.unit.aws.cluster_sim import SimCluster, simulate


@dataclass
class FleetRunner:
    fleet: Fleet
    # Called after each command with (instance id, argv, result): a test interrupts here.
    after: Callable[[str, Sequence[str], Result], None] | None = None
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def run(self, instance_id: str, argv: Sequence[str], timeout: float) -> Result:
        inst = self.fleet.instances[instance_id]
        if inst.state["state"] != "running":
            return Result(255, "", f"SSM Undeliverable: instance {instance_id} is not running")
        done = inst.exec(list(argv), timeout)
        result = Result(done.returncode, done.stdout, done.stderr)
        self.calls.append((instance_id, tuple(argv)))
        if self.after is not None:
            self.after(instance_id, argv, result)
        return result

    def refreshes(self) -> list[str]:
        names = {i.id: i.name for i in self.fleet.instances.values()}
        return [names[i] for i, argv in self.calls if argv[:2] == ("snap", "refresh")]


@dataclass
class WorldClock:
    directory: Path

    def now(self) -> float:
        return world.now(world.read(self.directory))

    def sleep(self, seconds: float) -> None:
        with world.locked(self.directory) as state:
            state["clock_offset"] = float(state.get("clock_offset", 0)) + seconds


@dataclass
class Booted:
    sim: SimCluster
    control_planes: list[Instance]
    workers: list[Instance]

    @property
    def fleet(self) -> Fleet:
        return self.sim.fleet

    def refs(self, instances: Sequence[Instance], role: str, pool: str | None = None) -> list[NodeRef]:
        return [NodeRef(i.id, i.name, role, pool) for i in instances]  # type: ignore[arg-type]

    @property
    def cp_refs(self) -> list[NodeRef]:
        return self.refs(self.control_planes, "control-plane")

    @property
    def worker_refs(self) -> list[NodeRef]:
        return self.refs(self.workers, "worker", "l40s")

    def cluster(self) -> dict:  # type: ignore[type-arg]
        state = world.read(self.fleet.dir)
        return dict(state["cluster"])


def boot(tmp: Path, stack: str = "aws-prod", workers: int = 2, track: str = "1.34-classic",
         store: bool = False, boot_override: dict[str, Any] | None = None) -> Booted:
    """A cluster built by the real node script: control planes one after the other, then workers.
    `store`: its nodes install the channel's snap from the store (cluster_sim.from_the_store);
    `boot_override`: what the user-data tells every node beyond the stack's (e.g. a snap pin)."""
    sim = simulate(tmp, stack, track, boot_override, store=store)
    cps = []
    for i in range(sim.settings.control_plane.count):  # launched as Pulumi does: each after the last joined
        cp = sim.control_plane(i)
        assert cp.run().returncode == 0, cp.log
        cps.append(cp)
    ws = [sim.worker(0) for _ in range(workers)]
    for w in ws:
        w.start()
    for w in ws:
        assert w.wait().returncode == 0, w.log
    return Booted(sim, cps, ws)


class BootOnce:
    """Each distinct cluster booted once per test process, then handed to every test that asks as a
    fresh copy of the world it left right after booting.

    Booting runs the real node script on every node (tens of fake calls each, seconds of CPU); the
    tests then only differ in what they do to the cluster. A copy is the booted world itself: the
    same directory (the shims and instance roots name it), restored file for file, its own k8sd
    listeners started again, new Instance objects (no process, the env they booted with). Only the
    wall clock moved on meanwhile, by the minutes earlier tests took, as for a cluster booted that
    much earlier."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._booted: dict[str, tuple[Booted, Path]] = {}

    def get(self, **kw: Any) -> Booted:
        """`boot(**kw)`'s cluster, as it was right after booting (the SimCluster too: a test may
        change what later nodes are told)."""
        key = repr(sorted(kw.items()))
        if key not in self._booted:
            b = boot(self.root / f"cluster-{len(self._booted)}", **kw)
            b.fleet.close()  # its listeners stop; the copy below is taken at rest
            saved = b.fleet.dir.with_name("world-as-booted")
            shutil.copytree(b.fleet.dir, saved, symlinks=True)
            self._booted[key] = (b, saved)
        b, saved = self._booted[key]
        fleet = b.fleet
        shutil.rmtree(fleet.dir)
        shutil.copytree(saved, fleet.dir, symlinks=True)

        def fresh(inst: Instance) -> Instance:
            return dataclasses.replace(inst, env=dict(inst.env), process=None, result=None)

        cps, workers = [fresh(i) for i in b.control_planes], [fresh(i) for i in b.workers]
        fleet.instances = {i.id: i for i in (*cps, *workers)}
        fleet.supervisor = Supervisor(fleet.dir)
        fleet.supervisor.start()
        return Booted(dataclasses.replace(b.sim), cps, workers)
