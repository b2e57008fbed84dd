"""Every name-bearing AWS resource the program registers for a stack, without running it (pure).

The settings rule `_aws_names` checks these names before any resource exists, so a too-long
environment is a clean settings error instead of a failed `pulumi preview`. The logical names
mirror the component nesting (AwsCluster "<cluster>" > child "<cluster>-<part>" > resource);
tests/unit/aws/test_naming.py proves this list equals what the program registers.

Names derived from the cluster name fit their AWS limit for every environment the settings accept:
readable when they fit, hashed only where a limit needs it (components/tables/hashed_names.py, ADR 0042).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..facts.cluster import AddonFacts
from ..facts.efa import placement
from ..settings.model import Settings
from ..tables import tokens
from ..tables.backup_names import bucket_name, key_alias, user_name
from ..tables.hashed_names import fit
from .naming import NAME_RULES, explicit_name, logical_name, name_problems, physical_name

BACKUP = "backup"  # __main__.py: BackupTarget("backup", settings)
NODE_ROLES = ("control-plane", "worker")
SECRETS = ("join-auth", "ca-keys")


LB, TG = tokens.AWS_LB_LOAD_BALANCER, tokens.AWS_LB_TARGET_GROUP
ROLE, LT, SSM_DOC = tokens.AWS_IAM_ROLE, tokens.AWS_EC2_LAUNCH_TEMPLATE, tokens.AWS_SSM_DOCUMENT


def api_lb_name(cluster_name: str) -> str:
    """The API NLB's and its target group's AWS name (ELBv2 allows one name for both, so the
    tighter rule). Explicit: pulumi-aws would auto-name the LB up to 255 chars, while AWS allows 32."""
    return fit(cluster_name, "-api", min(NAME_RULES[LB].max_len, NAME_RULES[TG].max_len))


def mint_document_name(cluster_name: str) -> str:
    """The SSM document nodes run to mint their worker join token."""
    return explicit_name(SSM_DOC, cluster_name, "-mint-worker-token")


def node_role_name(cluster_name: str, role: str) -> str:
    """Logical name of a node role's IAM role (auto-named: 64 characters with the random suffix)."""
    return logical_name(ROLE, cluster_name, f"-{role}-role")


def launch_template_name(cluster_name: str, pool: str) -> str:
    """Logical name of a pool's launch template (auto-named: 125 characters with the random suffix)."""
    return logical_name(LT, cluster_name, f"-pool-{pool}-lt")


@dataclass(frozen=True)
class PlannedName:
    token: str
    logical: str
    explicit: str | None  # None: pulumi-aws auto-names it from `logical`
    field: str  # the settings path whose value drives the name

    @property
    def physical(self) -> str:
        return physical_name(self.token, self.logical, self.explicit)

    def problems(self) -> list[str]:
        return name_problems(self.token, self.logical, self.explicit)


def _cluster(cluster: str, groups: tuple[str, ...]) -> list[PlannedName]:
    env = "settings.environment"  # cluster_name is ck8s-{environment}-{region}
    api = f"{cluster}-api"  # ApiLoadBalancer component
    out = [
        PlannedName(LB, f"{api}-nlb", api_lb_name(cluster), env),
        PlannedName(TG, f"{api}-tg", api_lb_name(cluster), env),
        PlannedName(SSM_DOC, f"{cluster}-mint-worker-token", mint_document_name(cluster), env),
    ]
    for role in NODE_ROLES:  # NodeRole f"{cluster}-{role}"
        out += [
            PlannedName(ROLE, node_role_name(cluster, role), None, env),
            PlannedName(tokens.AWS_IAM_ROLE_POLICY, f"{cluster}-{role}-node", None, env),
            PlannedName(tokens.AWS_IAM_INSTANCE_PROFILE, f"{cluster}-{role}-profile", None, env),
        ]
    out += [PlannedName(tokens.AWS_SECRETSMANAGER_SECRET, f"{cluster}-secrets-{s}", None, env) for s in SECRETS]
    out += [PlannedName(tokens.AWS_EC2_SECURITY_GROUP, f"{cluster}-sg-{g}", None, env) for g in groups]
    return out


def _pools(settings: Settings) -> list[PlannedName]:
    out: list[PlannedName] = []
    for i, pool in enumerate(settings.node_pools):  # GpuNodePool f"{cluster}-pool-{pool}"
        base = f"{settings.cluster_name}-pool-{pool.name}"
        field = f"settings.nodePools[{i}].name"
        out += [
            PlannedName(LT, launch_template_name(settings.cluster_name, pool.name), None, field),
            PlannedName(tokens.AWS_AUTOSCALING_GROUP, f"{base}-asg", None, field),
        ]
        pg = placement(pool)
        if pg is not None and pg.group_name is None:
            out.append(PlannedName(tokens.AWS_EC2_PLACEMENT_GROUP, f"{base}-pg", None, field))
    return out


def _backup(cluster: str) -> list[PlannedName]:
    env = "settings.environment"
    return [
        PlannedName(tokens.AWS_KMS_ALIAS, f"{BACKUP}-key-alias", key_alias(cluster), env),
        PlannedName(tokens.AWS_S3_BUCKET, f"{BACKUP}-bucket", bucket_name(cluster), env),
        PlannedName(tokens.AWS_IAM_USER, f"{BACKUP}-user", user_name(cluster), env),
        PlannedName(tokens.AWS_IAM_USER_POLICY, f"{BACKUP}-user-policy", None, "settings.backup"),
    ]


def planned_names(settings: Settings, addons: AddonFacts) -> list[PlannedName]:
    """Exactly the name-bearing AWS resources `__main__.py` registers for `settings` (with the add-on
    set `addons` describes)."""
    if settings.platform != "aws" or settings.region is None:
        return []
    # Imported here: these modules import the package that imports this one (cycle otherwise).
    from .security_groups import groups_for

    out = _cluster(settings.cluster_name, groups_for(settings)) + _pools(settings)
    if addons.backup_target:
        out += _backup(settings.cluster_name)
    return out
