"""Stack-wide policies: every GPU stack proves itself with a smoke test; prod keeps what a
disaster-recovery rebuild needs; prod has a control plane that survives losing a node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from ..tables import tokens
from ..tables.labels import CONTROL_PLANE_ROLE, ROLE_TAG
from .facts import StackFacts, facts_of
from .helm import HELM_TYPES, advertisers
from .props import get

SMOKE_TEST_TYPE = tokens.SMOKE_TEST
SMOKE_RUN_TYPE = tokens.DYNAMIC_SMOKE_RUN
CA_CERT = tokens.TLS_SELF_SIGNED_CERT
PRIVATE_KEY = tokens.TLS_PRIVATE_KEY
INSTANCE = tokens.AWS_EC2_INSTANCE
# What a rebuild cannot recreate identically, and why. (Control-plane instances, CA certs and CA
# keys are recognised by their contents: see `dr_critical`.)
DR_TYPES: dict[str, str] = {
    tokens.AWS_SECRETSMANAGER_SECRET: "CAPI join auth and CA secrets new control planes read at boot",
    tokens.AWS_KMS_KEY: "keys encrypting backups and secrets: lose it and they are unreadable",
    tokens.AWS_S3_BUCKET: "backup store",
    tokens.AWS_S3_BUCKET_V2: "backup store",
    tokens.AWS_EBS_VOLUME: "persistent data",
    tokens.AWS_LB_LOAD_BALANCER: "the API endpoint every kubeconfig names",
    tokens.AWS_EC2_VPC: "the network every node and load balancer lives in",
}


@dataclass
class Res:
    """The part of a policy resource these checks read (PolicyResource or the offline record)."""

    type: str
    urn: str
    props: Mapping[str, Any]
    protect: bool
    dependencies: list[str] = field(default_factory=list)


def _res(args: StackValidationArgs) -> list[Res]:
    out = []
    for r in args.resources:
        deps = [d.urn for d in (r.dependencies or [])]
        deps += [d.urn for ds in (r.property_dependencies or {}).values() for d in ds]
        out.append(Res(r.resource_type, r.urn, r.props, bool(r.opts.protect), deps))
    return out


def _is_control_plane(r: Res) -> bool:
    tags = r.props.get("tags")  # tag keys may contain dots: no dotted path here
    return r.type == INSTANCE and isinstance(tags, Mapping) and tags.get(ROLE_TAG) == CONTROL_PLANE_ROLE


# --- smoke test ---------------------------------------------------------------------------------

def smoke_scope(resources: Sequence[Res], facts: StackFacts | None) -> str | None:
    """None when the smoke test applies, else why not. It proves the DRA allocation path, so it
    applies to GPU stacks that allocate through DRA (the settings refuse it under the device
    plugin). Without settings, the releases tell: any DRA GPU advertiser makes it apply."""
    if facts is not None:
        if not facts.gpu_stack:
            return "no GPU node pools"
        return None if facts.dra else "allocation device-plugin: the smoke test proves the DRA path only"
    plugins, dra = [], []
    for r in resources:
        if r.type in HELM_TYPES:
            p, d = advertisers(r.props)
            plugins += p
            dra += d
    if dra:
        return None
    return "GPUs through the device plugin only" if plugins else "no GPU advertiser in this stack"


def _depends_on(run: Res, by_urn: Mapping[str, Res]) -> set[str]:
    """Every urn `run` waits for, directly or through what it waits for."""
    seen: set[str] = set()
    todo = list(run.dependencies)
    while todo:
        urn = todo.pop()
        if urn in seen:
            continue
        seen.add(urn)
        if urn in by_urn:
            todo += by_urn[urn].dependencies
    return seen


def _pods(spec: Any) -> int:
    cases = get(spec, "expectations.cases") if isinstance(spec, Mapping) else None
    if not isinstance(cases, list):
        return 0
    counts = [c.get("pods") for c in cases if isinstance(c, Mapping)]
    return sum(n for n in counts if isinstance(n, int) and not isinstance(n, bool) and n > 0)


def smoke_problems(resources: Sequence[Res], facts: StackFacts | None) -> list[str]:
    """The smoke test is there, runs, and runs after the GPU stack: a SmokeTest component alone proves
    nothing (its SmokeRun is what runs the pods and fails `up`); a run of no GPU pod allocates
    nothing; a run that does not wait for a DRA advertiser's release may judge a cluster without it."""
    problems = []
    if facts is not None and not facts.smoke_enabled:
        problems.append("smokeTest.enabled is false: a DRA GPU stack must prove the allocation path on every up")
    if not any(r.type == SMOKE_TEST_TYPE for r in resources):
        problems.append(f"no {SMOKE_TEST_TYPE} resource: nothing proves GPUs are allocatable after deployment")
        return problems
    runs = [r for r in resources if r.type == SMOKE_RUN_TYPE]
    if not runs:
        problems.append(f"no {SMOKE_RUN_TYPE} under the {SMOKE_TEST_TYPE}: the component is there but nothing runs "
                        "the pods or fails `up` when they do not get a GPU")
        return problems
    by_urn = {r.urn: r for r in resources}
    gpu_stack = [r.urn for r in resources if r.type in HELM_TYPES and advertisers(r.props)[1]]
    for run in runs:
        spec = run.props.get("spec")
        if isinstance(spec, Mapping) and _pods(spec) == 0:
            problems.append(f"{run.urn.rsplit('::', 1)[-1]} runs no GPU pod (its cases ask for none): it proves "
                            "nothing")
        waits = _depends_on(run, by_urn)
        missing = [u.rsplit("::", 1)[-1] for u in gpu_stack if u not in waits]
        if missing:
            problems.append(f"{run.urn.rsplit('::', 1)[-1]} does not wait for {', '.join(missing)}: it can judge the "
                            "cluster before the DRA driver it proves is installed")
    return problems


def validate_smoke_required(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources, facts = _res(args), facts_of(args)
    reason = smoke_scope(resources, facts)
    if reason is not None:
        args.not_applicable(reason)
        return
    for problem in smoke_problems(resources, facts):
        report_violation(problem, None)


# --- disaster recovery --------------------------------------------------------------------------

def dr_critical(resources: Sequence[Res]) -> dict[str, str]:
    """urn -> why a rebuild needs it."""
    out = {r.urn: DR_TYPES[r.type] for r in resources if r.type in DR_TYPES}
    by_urn = {r.urn: r for r in resources}
    for r in resources:
        if r.type == CA_CERT and get(r.props, "isCaCertificate") is True:
            out[r.urn] = "cluster CA certificate: every kubeconfig and node trusts it"
            for dep in r.dependencies:
                if dep in by_urn and by_urn[dep].type == PRIVATE_KEY:
                    out[dep] = "cluster CA private key: without it no new node or client certificate"
        if _is_control_plane(r):
            out[r.urn] = "control plane: etcd lives on its root volume"
    return out


def dr_problems(resources: Sequence[Res], facts: StackFacts) -> list[tuple[str | None, str]]:
    if not facts.prod:
        return []
    problems: list[tuple[str | None, str]] = []
    if not facts.protect:
        problems.append((None, "protection.protect is false in prod: `pulumi destroy` or a replacement could "
                               "delete state a rebuild needs"))
    if not facts.retain_on_delete:
        problems.append((None, "protection.retainOnDelete is false in prod: a deleted resource takes its cloud "
                               "object (secrets, CA, endpoint) with it"))
    if facts.platform in ("aws", "existing") and facts.backup_region is None:
        problems.append((None, "no backup: prod needs backup.region (Velero to a bucket in another region)"))
    by_urn = {r.urn: r for r in resources}
    for urn, why in sorted(dr_critical(resources).items()):
        if not by_urn[urn].protect:
            problems.append((urn, f"not protected in prod ({why})"))
    return problems


def validate_dr(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    facts = facts_of(args)
    if facts is None:
        args.not_applicable("stack settings (ck8s-gpu:settings) unavailable: environment unknown")
        return
    for urn, problem in dr_problems(_res(args), facts):
        report_violation(problem, urn)


# --- control plane ------------------------------------------------------------------------------

def control_plane_problems(resources: Sequence[Res], facts: StackFacts) -> list[str]:
    if not facts.prod or facts.platform != "aws":
        return []
    instances = [r for r in resources if _is_control_plane(r)]
    count = len(instances) if instances else facts.control_plane_count
    if count >= 3:
        return []
    return [f"{count} control plane(s) in prod: losing the bootstrap node loses the cluster "
            "(etcd needs 3 for quorum); set controlPlane.count: 3"]


def validate_control_plane(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    facts = facts_of(args)
    if facts is None:
        args.not_applicable("stack settings (ck8s-gpu:settings) unavailable: environment unknown")
        return
    for problem in control_plane_problems(_res(args), facts):
        report_violation(problem, None)


SMOKE_TEST_REQUIRED = StackValidationPolicy(
    name="smoke-test-required",
    description="Every GPU stack allocating through DRA runs the in-cluster smoke test (SmokeTest, enabled).",
    validate=validate_smoke_required,
    enforcement_level=EnforcementLevel.MANDATORY,
)
PROD_PROTECTS_DR_STATE = StackValidationPolicy(
    name="prod-protects-dr-state",
    description="Prod protects (and retains) what a disaster-recovery rebuild needs, and backs up off-region.",
    validate=validate_dr,
    enforcement_level=EnforcementLevel.MANDATORY,
)
PROD_SINGLE_CONTROL_PLANE = StackValidationPolicy(
    name="prod-single-control-plane",
    description="Prod runs three control planes.",
    validate=validate_control_plane,
    enforcement_level=EnforcementLevel.ADVISORY,
)
