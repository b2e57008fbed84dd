"""Pre-flight of existing placement groups (pure): a pool's `placement.groupName` must name a group
of this region in state `available` whose strategy (and partition count, spread level) is the one
the settings declare: the program launches into it as declared, and AWS answers a launch into a
group of another strategy than expected with an error at scale-up, not at `up`.

Sources (read 2026-12): EC2 API Reference, `PlacementGroup` data type (State pending | available |
deleting | deleted; Strategy cluster | spread | partition; PartitionCount; SpreadLevel host | rack)
and `DescribePlacementGroups` (filter `group-name`); EC2 User Guide, placement-groups.html: an
instance launches only into a group in the `available` state.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..settings.model import Settings
from ..settings.problems import ROOT
from .facts import RegionFacts
from .findings import Finding


def check(settings: Settings, facts: RegionFacts) -> Iterator[Finding]:
    for i, pool in enumerate(settings.node_pools):
        pg = pool.placement
        if pg is None or pg.group_name is None:
            continue
        where = f"{ROOT}.nodePools[{i}].placement.groupName"
        if "placement-groups" in facts.errors:
            yield Finding("could-not-check", "warning", where,
                          f"placement group '{pg.group_name}' not checked: {facts.errors['placement-groups']}")
            continue
        group = facts.placement_groups.get(pg.group_name)
        if group is None:
            yield Finding("placement-group-missing", "error", where,
                          f"no placement group '{pg.group_name}' in {facts.region}: create it (strategy "
                          f"{pg.strategy}) or name one that exists; a cluster group's reserved capacity lives only "
                          "in the group its reservation was made in")
            continue
        if group.state != "available":
            yield Finding("placement-group-state", "error", where,
                          f"placement group '{group.name}' is {group.state or 'in no state'}: instances launch only "
                          "into an available group")
        wrong = []
        if group.strategy != pg.strategy:
            wrong.append(f"its strategy is {group.strategy or 'unknown'}, the pool declares {pg.strategy}: set "
                         f"placement.strategy: {group.strategy}")
        if pg.partition_count is not None and group.partition_count != pg.partition_count:
            wrong.append(f"it has {group.partition_count} partition(s), the pool declares {pg.partition_count}")
        if pg.spread_level is not None and group.spread_level != pg.spread_level:
            wrong.append(f"its spread level is {group.spread_level}, the pool declares {pg.spread_level}")
        if wrong:
            yield Finding("placement-group-mismatch", "error", where,
                          f"placement group '{group.name}' is not what the settings say: " + "; ".join(wrong))
