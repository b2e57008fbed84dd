"""The timeline of a plan (pure): its steps from the recorded resources, the driver and toolkit modes
its values choose, each node's boot media, the Capacity Block warnings and the what-ifs."""

from __future__ import annotations

from datetime import UTC, datetime

from .artifacts import user_data
from .clock import clock
from .mockengine import Recorded
from .node_media import NodeMedia, node_media
from .operator_modes import driver_mode_of
from .run import Plan
from .timeline import (
    ASG,
    INSTANCE,
    LAUNCH_TEMPLATE,
    Timeline,
    _cp_index,
    _pool_name,
    block_waits,
    build_steps,
    capacity_timeout,
    make_timeline,
)
from .what_if import what_if_results


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
