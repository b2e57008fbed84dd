"""An ECR mirror: pull-through cache rules, and what the nodes' roles need to pull from it (pure
tables and statements, a thin component). docs/adr/0043.

Sources:
- ECR User Guide, pull-through-cache.html: the upstreams ECR caches (ECR Public, registry.k8s.io
  and Quay without credentials; Docker Hub and GitHub Container Registry with a Secrets Manager
  secret); nvcr.io is not one of them, so NVIDIA's images reach an offline cluster only inside the
  node images (images.preloaded).
- ECR API CreatePullThroughCacheRule: `ecrRepositoryPrefix` 2-30 characters of
  `(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*` ("a / is always applied to the end
  of the prefix"), `upstreamRegistryUrl` per upstream: public.ecr.aws, registry-1.docker.io, ghcr.io,
  registry.k8s.io, quay.io.
- ECR User Guide, pull-through-cache-iam.html: the first pull through a rule needs
  ecr:CreateRepository and ecr:BatchImportUpstreamImage besides the pull actions;
  ecr:GetAuthorizationToken has no resource-level scoping (Service Authorization Reference, ECR).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi

from ..settings.model import Settings
from ..settings.offline_rules import ecr_mirror
from ..tables import tokens


@dataclass(frozen=True)
class Upstream:
    host: str  # the mirror layout's folder: <mirror>/<host>/<repository>
    cache_url: str | None  # CreatePullThroughCacheRule upstreamRegistryUrl; None: ECR cannot cache it
    needs_credentials: bool


UPSTREAMS: tuple[Upstream, ...] = (
    Upstream("docker.io", "registry-1.docker.io", True),
    Upstream("ghcr.io", "ghcr.io", True),
    Upstream("nvcr.io", None, False),
    Upstream("public.ecr.aws", "public.ecr.aws", False),
    Upstream("quay.io", "quay.io", False),
    Upstream("registry.k8s.io", "registry.k8s.io", False),
)
PREFIX = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")
PULL_ACTIONS = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
CACHE_ACTIONS = ("ecr:BatchImportUpstreamImage", "ecr:CreateRepository")


@dataclass(frozen=True)
class CacheRule:
    prefix: str
    upstream_url: str
    credential_arn: str | None


def cache_rules(s: Settings) -> list[CacheRule]:
    """One rule per upstream ECR can cache for this stack: the credential-free ones always, the
    others where images.credentials names their secret (without it ECR refuses the rule)."""
    if s.images.pull_through_cache != "create":
        return []
    out = []
    for u in UPSTREAMS:
        arn = s.images.credentials.get(u.host)  # type: ignore[call-overload]
        if u.cache_url is None or (u.needs_credentials and arn is None):
            continue
        assert PREFIX.match(u.host) and 2 <= len(u.host) <= 30, u.host
        out.append(CacheRule(u.host, u.cache_url, arn))
    return out


def mirror_pull_statements(s: Settings) -> list[dict[str, object]]:
    """What a node's role needs to pull through an ECR mirror, in whatever Region and under
    whatever repository prefix it is ([] when the mirror is not ECR): the token (no resource-level
    scoping), the pulls on the mirror's upstream folders only, and, with cache rules, the first
    pull's repository creation and import there."""
    ecr = ecr_mirror(s.images.mirror)
    if ecr is None:
        return []
    account, region, partition = ecr.account, ecr.region, ecr.partition
    prefix = f"{ecr.path}/" if ecr.path else ""
    repos = [f"arn:{partition}:ecr:{region}:{account}:repository/{prefix}{u.host}/*" for u in UPSTREAMS]
    statements: list[dict[str, object]] = [
        {"Sid": "MirrorToken", "Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": "*"},
        {"Sid": "PullFromMirror", "Effect": "Allow", "Action": list(PULL_ACTIONS), "Resource": repos},
    ]
    if cache_rules(s):
        cached = [f"arn:{partition}:ecr:{region}:{account}:repository/{r.prefix}/*" for r in cache_rules(s)]
        statements.append({"Sid": "FillMirrorCache", "Effect": "Allow", "Action": list(CACHE_ACTIONS),
                           "Resource": cached})
    return statements


class RegistryCache(pulumi.ComponentResource):
    """The pull-through cache rules of images.pullThroughCache: create (one per upstream host)."""

    def __init__(self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None) -> None:
        import pulumi_aws as aws

        super().__init__(tokens.REGISTRY_CACHE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.prefixes = [r.prefix for r in cache_rules(settings)]
        for rule in cache_rules(settings):
            aws.ecr.PullThroughCacheRule(
                f"{name}-{rule.prefix}", ecr_repository_prefix=rule.prefix, upstream_registry_url=rule.upstream_url,
                credential_arn=rule.credential_arn, opts=child)
        self.register_outputs({"prefixes": self.prefixes})
