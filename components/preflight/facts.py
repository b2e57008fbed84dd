"""What pre-flight knows about a region: plain data gathered by the boundary (or a test)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RegionFacts:
    region: str
    # Set when the region cannot be used at all (not enabled for the account, bad credentials):
    # nothing else was gathered.
    unavailable: str = ""
    zones: tuple[str, ...] = ()  # available AZs (zone type availability-zone), in AWS's order
    # AZs of `network.existing` subnets, when the stack brings its own network.
    subnet_zones: tuple[str, ...] = ()
    offerings: dict[str, frozenset[str]] = field(default_factory=dict)  # type -> AZs offering it
    vcpus: dict[str, int] = field(default_factory=dict)  # from DescribeInstanceTypes
    # image source (SSM parameter path or `ami-` id) -> AMI id (None: missing or not available)
    amis: dict[str, str | None] = field(default_factory=dict)
    quotas: dict[str, float] = field(default_factory=dict)  # quota code -> applied (or default) value
    # Calls that failed for another reason than "not found" (access denied, throttling): the
    # checks they feed report "could not check", never "ok".
    errors: dict[str, str] = field(default_factory=dict)  # what -> error text
