"""Settings rules: the network: VPC, subnets, CIDRs, the API's allow list."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from ..model import Settings
from ..problems import ROOT, Problem, cut


def _networks(s: Settings) -> Iterator[Problem]:
    nets: dict[str, ipaddress.IPv4Network | ipaddress.IPv6Network] = {}
    named = {
        f"{ROOT}.kubernetes.podCidr": s.kubernetes.pod_cidr,
        f"{ROOT}.kubernetes.serviceCidr": s.kubernetes.service_cidr,
    }
    if s.platform == "aws" and s.network.existing is None:
        named[f"{ROOT}.network.vpcCidr"] = s.network.vpc_cidr
    for path, cidr in named.items():
        try:
            nets[path] = ipaddress.ip_network(cidr)
        except ValueError:
            yield path, f"'{cidr}' is not a valid CIDR"
    items = list(nets.items())
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            if items[a][1].overlaps(items[b][1]):
                yield items[b][0], f"{items[b][1]} overlaps {items[a][0]} ({items[a][1]})"
    vpc = nets.get(f"{ROOT}.network.vpcCidr")
    if vpc is not None and (vpc.version != 4 or not 16 <= vpc.prefixlen <= 24):
        # AWS VPC User Guide, "VPC CIDR blocks": IPv4 primary blocks from /16 to /28; the subnet
        # plan (components/aws/network.py plan_subnets) cuts quarters and sixteenths: /24 at most.
        yield (f"{ROOT}.network.vpcCidr", f"{vpc} must be an IPv4 block from /16 to /24 (AWS allows /16-/28 for "
                                          "a VPC; the subnet plan needs at least a /24)")
    if s.platform == "kind":
        for key in ("podCidr", "serviceCidr"):
            net = nets.get(f"{ROOT}.kubernetes.{key}")
            if net is not None and net.version != 4:
                # kind's config (components/kind/config.py) runs ipFamily ipv4: both ranges IPv4.
                yield f"{ROOT}.kubernetes.{key}", f"{net} must be IPv4 on kind (the cluster runs ipFamily ipv4)"
    seen: dict[str, int] = {}
    for i, cidr in enumerate(s.network.api_allow_list):
        try:
            net = ipaddress.ip_network(cidr)
        except ValueError:
            yield f"{ROOT}.network.apiAllowList[{i}]", f"'{cut(cidr)}' is not a valid CIDR"
            continue
        if str(net) in seen:  # one security-group rule per CIDR: a repeat is a second resource, same URN
            yield (f"{ROOT}.network.apiAllowList[{i}]", f"{net} is already allowed by "
                                                        f"apiAllowList[{seen[str(net)]}]")
        seen.setdefault(str(net), i)
    ex = s.network.existing
    if ex is not None and len(ex.private_subnet_ids) < 2:
        yield (f"{ROOT}.network.existing.privateSubnetIds",
               "needs at least 2 private subnets in different availability zones")
