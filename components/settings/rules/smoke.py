"""Settings rules: the smoke test: its cases, pools, GPUs, memory and queue."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .. import k8s_syntax
from ..facts import (
    gpus_provided,
    mirrored_pool,
    pool_gpus,
    smoke_pools,
)
from ..model import Settings
from ..problems import ROOT, Problem, cut
from .queues import leaf_queues, smoke_quota_problems


def _smoke_queue_quota(s: Settings, path: str) -> Iterator[Problem]:
    t = s.smoke_test
    needed = t.gpus if (t.whole_gpu or t.gang) else 1
    yield from smoke_quota_problems(s, needed, f"the smoke test ({path}.queue '{t.queue}')", "smokeTest.gpus")


def _smoke(s: Settings) -> Iterator[Problem]:
    t = s.smoke_test
    if not t.enabled:
        return
    path = f"{ROOT}.smokeTest"
    # Cases run one after another (components/smoke/run.py): the largest holds `gpus` at a time.
    needed = t.gpus
    known = all(pool_gpus(p) is not None for p in s.node_pools)  # unknown pools are reported already
    mirror_ok = s.platform != "kind" or s.kind.mirror_pool in (None, *(p.name for p in s.node_pools))
    available = gpus_provided(s, smoke_pools(s)) if known and mirror_ok else 0
    if t.whole_gpu and known and mirror_ok and needed > available:
        cut_pools = [p.name for p in smoke_pools(s) if p.cuts_gpus]
        if cut_pools:
            yield (f"{path}.gpus", f"needs {needed} whole GPUs but {available} remain at the desired size: the "
                                   f"MIG layout of {', '.join(cut_pools)} cuts every GPU into MIG devices (set "
                                   "wholeGpu false and let the MIG case prove the path, or pin smokeTest.pool to a "
                                   "whole-GPU pool)")
        elif s.platform == "kind":
            yield (f"{path}.gpus", f"needs {needed} GPUs but kind simulates only pool '{mirrored_pool(s).name}' "
                                   f"({available} GPUs); set settings.kind.mirrorPool or lower the count")
        elif t.pool is not None:
            yield (f"{path}.gpus", f"needs {needed} GPUs but pool '{t.pool}' (smokeTest.pool) provides {available} "
                                   "at its desired size")
        else:
            yield (f"{path}.gpus", f"needs {needed} GPUs but the node pools provide {available} at their desired size")
    # Whether KAI is there (installed here or declared present) is the add-on graph's rule.
    if t.scheduler == "kai" and t.queue not in leaf_queues(s):
            yield f"{path}.queue", f"'{t.queue}' is not a leaf queue of settings.queues (only leaf queues schedule)"
    if t.scheduler == "kai":
        yield from _smoke_queue_quota(s, path)
    if t.gang and t.scheduler != "kai":
        yield f"{path}.gang", "gang scheduling needs scheduler: kai"
    if s.gpu_stack.allocation != "dra":
        yield (f"{path}.enabled",
               "the smoke test proves the DRA allocation path: it cannot run with allocation device-plugin")
    if t.gang and t.gpus < 2:
        yield f"{path}.gpus", "the gang case needs at least 2 pods (gpus >= 2): a gang of one proves nothing"
    layouts = any(p.mig is not None for p in s.node_pools)
    if t.mig and ((s.gpu_stack.mig_strategy == "none" and not layouts) or s.gpu_stack.allocation != "dra"):
        yield (f"{path}.mig", "the MIG case needs MIG devices (a pool's nodePools[].mig layout, or "
                              "gpuStack.migStrategy single|mixed) and allocation dra")
    simulated_mig = s.platform == "local" and any(p.cuts_gpus and p.name in s.local.kubelet_pools
                                                  for p in s.node_pools)
    if t.mig and s.platform in SIMULATED_GPUS and not simulated_mig:
        yield (f"{path}.mig", f"{SIMULATED_GPUS[s.platform]} publishes whole GPUs only (type gpu): no MIG device "
                              "exists, so the MIG case could never be allocated")
    if t.mig_profile is not None and layouts:
        yield (f"{path}.migProfile", "with nodePools[].mig layouts the MIG case asks each such pool for every "
                                     "profile of its own layout: leave migProfile out")
    yield from _whole_gpus_on_cut_pools(s)
    for i, secret in enumerate(t.image_pull_secrets):
        # Secret names are DNS subdomains (k8s.io/apimachinery validation IsDNS1123Subdomain).
        for reason in k8s_syntax.dns_subdomain_problems(secret):
            yield f"{path}.imagePullSecrets[{i}]", f"'{cut(secret)}' is no Secret name: {reason}"
    yield from _smoke_cases(s)
    yield from _smoke_memory(s)


def _whole_gpus_on_cut_pools(s: Settings) -> Iterator[Problem]:
    """Every smoke setting that pins whole-GPU work to a pool, judged against that pool's MIG layout:
    a cut pool has no whole GPU, so such a case could never be allocated there. (smokeTest.pool with
    whole-GPU cases: the GPU count above says it with numbers.)"""
    t, path = s.smoke_test, f"{ROOT}.smokeTest"
    cut_pools = {p.name for p in s.node_pools if p.cuts_gpus}
    pinned = (
        ("allReduce.pool", t.all_reduce.pool, t.all_reduce.enabled),
        ("nvlinkGroup.pool", t.nvlink_group.pool, t.nvlink_group.enabled),
        ("computeDomain.pool", t.compute_domain.pool, t.compute_domain.enabled),
        ("firstAvailable.preferredPool", t.first_available.preferred_pool, t.first_available.enabled),
        ("firstAvailable.fallbackPool", t.first_available.fallback_pool, t.first_available.enabled),
    )
    for key, name, whole in pinned:
        if whole and name in cut_pools:
            yield (f"{path}.{key}", f"'{name}' has a MIG layout that cuts every GPU (nodePools[].mig): the case "
                                    "asks for whole GPUs, which that pool never hands out")


# Who publishes the GPUs where no NVIDIA driver runs (components/kube/cluster_handle.py simulated_gpus).
SIMULATED_GPUS = {
    # run-ai/fake-gpu-operator v0.2.0 (3a3f644) internal/dra-plugin-gpu/discovery.go: type gpu only.
    "kind": "kind's fake-gpu-operator (its DRA plugin)",
    # tools/dra_publisher.py: devices gpu-<n> of type gpu, DeviceClass gpu.nvidia.com only.
    "local": "local's test publisher (tools/dra_publisher.py)",
}


# Why GPU sharing cannot be shown there: the opaque GpuConfig would be refused or read by nobody.
SHARING_UNSUPPORTED = {
    # internal/dra-plugin-gpu/state.go decodes every opaque config for driver gpu.nvidia.com with
    # sigs.k8s.io/dra-example-driver v0.2.0's strict decoder, which knows only
    # gpu.resource.example.com/v1alpha1 (api/example.com/resource/gpu/v1alpha1/api.go).
    "kind": "kind's fake-gpu-operator (v0.2.0) decodes opaque configs as gpu.resource.example.com/v1alpha1 only: "
            "it fails to prepare a claim carrying NVIDIA's resource.nvidia.com/v1beta1 GpuConfig, so the pods "
            "never start",
    "local": "local's nodes run no NVIDIA kubelet plugin (KWOK nodes none at all, kubelet pools the simulated "
             "one of tools/mod/simgpu, which applies no sharing): nothing would act on the GpuConfig, so the case "
             "would pass without sharing anything",
}


# A MIG profile as the NVIDIA DRA driver publishes it (attribute `profile`): go-nvlib's
# MigProfileInfo.String(), vendored by kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (764900e,
# vendor/github.com/NVIDIA/go-nvlib/pkg/nvlib/device/mig_profile.go; cmd/gpu-kubelet-plugin/
# nvlib.go sets Profile from it): `[<C>c.]<G>g.<GB>gb`, then `+<attr>[,<attr>]` (me, me.all, gfx)
# or `-<attr>` (what the profile lacks: -me). Attributes as parseMigProfileAttributes allows them.
_MIG_ATTRIBUTE = r"[a-z][a-z0-9]*(\.[a-z0-9]+)*"


MIG_PROFILE = re.compile(rf"(?:([0-9]+)c\.)?([0-9]+)g\.([0-9]+)gb(?:[+-]({_MIG_ATTRIBUTE}(?:,{_MIG_ATTRIBUTE})*))?")


def mig_profile_problems(profile: str) -> list[str]:
    """Why `profile` can never equal a MIG device's published `profile` attribute; [] when it can."""
    m = MIG_PROFILE.fullmatch(profile)  # fullmatch: `$` would let a trailing newline through
    if m is None:
        return [f"'{cut(profile)}' is not a MIG profile as the DRA driver publishes it: [<C>c.]<G>g.<GB>gb with "
                "optional +attributes or -attributes, like 1g.10gb, 1c.2g.20gb, 1g.10gb+me, 1g.12gb-me"]
    c, g, gb, attrs = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    problems = []
    if g == 0 or gb == 0 or (c is not None and int(c) == 0):
        problems.append(f"'{profile}': slice and memory counts start at 1")
    elif c is not None and int(c) == g:
        # String() leaves out the compute part when it equals the GPU instance's.
        problems.append(f"'{profile}' is published as '{profile.split('.', 1)[1]}' (the driver writes the c. part "
                        "only when the compute instance is smaller than its GPU instance)")
    elif c is not None and int(c) > g:
        # go-nvlib VisitMigProfiles skips such profiles (`if pi.C > pi.G`, pkg/nvlib/device/device.go).
        problems.append(f"'{profile}': a compute instance is part of its GPU instance, so c cannot exceed g")
    if attrs and len(set(attrs.split(","))) != len(attrs.split(",")):
        problems.append(f"'{profile}' repeats an attribute")
    return problems


def _smoke_cases(s: Settings) -> Iterator[Problem]:
    """The cases against each other: at least one runs, none contradicts `wholeGpu`, a MIG profile
    is one the driver can publish (docs/smoke-test.md)."""
    t = s.smoke_test
    path = f"{ROOT}.smokeTest"
    if not any((t.whole_gpu, t.shared_claim, t.shared_named_claim, t.gang, t.mig)):
        yield (f"{path}.wholeGpu", "is false and no other case is on: the smoke test would prove nothing (on a "
                                   "cluster whose GPUs are all MIG-partitioned, turn on the MIG case: mig or "
                                   "migProfile; or set smokeTest.enabled false)")
    if not t.whole_gpu:
        why = ("allocates whole GPUs, and wholeGpu false says the cluster hands out none (all GPUs "
               "MIG-partitioned): turn it off or set wholeGpu true")
        # nvlinkGroup refuses it itself (components/smoke/cases/nvlink_group.py), with its own words.
        for key, on in (("sharedClaim", t.shared_claim), ("sharedNamedClaim", t.shared_named_claim),
                        ("gang", t.gang), ("computeDomain.enabled", t.compute_domain.enabled),
                        ("firstAvailable.enabled", t.first_available.enabled)):
            if on:
                yield f"{path}.{key}", why
        if t.gpus != 1:
            yield f"{path}.gpus", f"is {t.gpus}, but with wholeGpu false no case runs whole-GPU pods to count"
        for key, value in (("productNamePattern", t.product_name_pattern), ("minMemoryGiB", t.min_memory_gib)):
            if value is not None:
                yield f"{path}.{key}", "selects whole GPUs, and with wholeGpu false no case asks for one"
    if t.mig_profile is not None:
        for reason in mig_profile_problems(t.mig_profile):
            yield f"{path}.migProfile", reason
        if not t.mig:
            yield (f"{path}.migProfile", "names the MIG case's profile, but smokeTest.mig is false: remove mig: "
                                         "false (a profile turns the MIG case on) or the profile")


def _smoke_memory(s: Settings) -> Iterator[Problem]:
    """minMemoryGiB becomes `device.capacity[...].memory >= <N>Gi` (charts/gpu-smoke-test): it must
    fit the memory the driver PUBLISHES, NVML's framebuffer, which is below the size on the box (an
    H100 80GB publishes 81559 MiB = 79.6 GiB). Else no device matches and the claims never allocate."""
    want = s.smoke_test.min_memory_gib
    if want is None or not s.traits.knows_node_pools or not s.smoke_test.whole_gpu:
        # existing: the pools are not ours to know; without whole-GPU cases _smoke_cases reports it.
        return
    facts = [(p, f) for p in s.node_pools if (f := pool_gpus(p)) is not None]
    if not facts or len(facts) < len(s.node_pools):
        return  # unknown pools are reported by _pools
    if all(f.memory_mib < want * 1024 for _p, f in facts):
        published = ", ".join(f"{p.name} ({f.product_name}) publishes {f.memory_mib} MiB = "
                              f"{f.memory_mib / 1024:.1f} GiB" for p, f in facts)
        best = max(f.memory_mib for _p, f in facts) // 1024
        yield (f"{ROOT}.smokeTest.minMemoryGiB",
               f"{want} GiB matches no GPU: {published} (the driver publishes NVML's framebuffer, below the size on "
               f"the box; components/tables/instance_types.py); at most {best}")


def _smoke_pool(s: Settings) -> Iterator[Problem]:
    """smokeTest.pool names a pool whose nodes the program labels, and one that runs containers."""
    pool, names = s.smoke_test.pool, [p.name for p in s.node_pools]
    path = f"{ROOT}.smokeTest.pool"
    if pool is None or not s.smoke_test.enabled:
        return
    if not s.traits.knows_node_pools:
        yield path, (f"the {s.platform} platform does not label its nodes by pool: select the GPU nodes with "
                     "smokeTest.productNamePattern instead")
    elif pool not in names:
        yield path, f"'{pool}' is not a node pool ({', '.join(names)})"
    elif s.local.kubelet_pools and pool not in s.local.kubelet_pools:
        yield path, (f"'{pool}' is a KWOK pool: no container runs there, so the in-container checks could never "
                     f"pass; pick a kubelet pool ({', '.join(s.local.kubelet_pools)})")
