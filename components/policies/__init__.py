"""The ck8s-gpu policy pack's policies, importable without starting a policy server.

`POLICIES` is what the pack (policy/__main__.py) assembles and what the offline run
(`components.policies.offline`) evaluates over a plan. Enforcement levels live on each policy:
mandatory ones block `pulumi up/preview --policy-pack`, advisory ones warn.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy

from .aws_nodes import ENCRYPTED_VOLUMES, IMDSV2_REQUIRED, NO_SPOT_IN_PROD
from .grafana import GRAFANA_ADMIN_CREDENTIALS
from .helm import HELM_RELEASE_PINNED, ONE_GPU_ADVERTISER
from .host_access import WORKLOAD_HOST_ACCESS
from .iam import IAM_DELEGATES_OWN_ROLES, NO_WILDCARD_IAM, NODE_ROLE_MANAGED_POLICIES
from .namespaces import GPU_NAMESPACE_POD_SECURITY, SMOKE_TEST_ISOLATED
from .network import NO_WORLD_INGRESS, NO_WORLD_INGRESS_SET, NO_WORLD_SSH
from .offline_images import OFFLINE_IMAGES
from .rbac import SECRET_READERS_LEAST_PRIVILEGE
from .resource_policies import NO_PUBLIC_RESOURCE_POLICY
from .secrets import (
    NO_PLAINTEXT_SECRETS,
    SECRETS_ONLY_IN_SECRET_OBJECTS,
    USER_DATA_WITHOUT_SECRETS,
)
from .stack import PROD_PROTECTS_DR_STATE, PROD_SINGLE_CONTROL_PLANE, SMOKE_TEST_REQUIRED
from .workloads import WORKLOAD_IMAGES_PINNED

PACK_NAME = "ck8s-gpu-guardrails"

POLICIES: tuple[Policy, ...] = (
    IMDSV2_REQUIRED,
    ENCRYPTED_VOLUMES,
    NO_WORLD_INGRESS,
    NO_WORLD_INGRESS_SET,
    NO_WORLD_SSH,
    NO_WILDCARD_IAM,
    NODE_ROLE_MANAGED_POLICIES,
    IAM_DELEGATES_OWN_ROLES,
    NO_PUBLIC_RESOURCE_POLICY,
    NO_PLAINTEXT_SECRETS,
    USER_DATA_WITHOUT_SECRETS,
    SECRETS_ONLY_IN_SECRET_OBJECTS,
    SECRET_READERS_LEAST_PRIVILEGE,
    GRAFANA_ADMIN_CREDENTIALS,
    HELM_RELEASE_PINNED,
    ONE_GPU_ADVERTISER,
    WORKLOAD_IMAGES_PINNED,
    WORKLOAD_HOST_ACCESS,
    OFFLINE_IMAGES,
    GPU_NAMESPACE_POD_SECURITY,
    SMOKE_TEST_REQUIRED,
    SMOKE_TEST_ISOLATED,
    PROD_PROTECTS_DR_STATE,
    NO_SPOT_IN_PROD,
    PROD_SINGLE_CONTROL_PLANE,
)
MANDATORY = frozenset(p.name for p in POLICIES if p.enforcement_level == EnforcementLevel.MANDATORY)
ADVISORY = frozenset(p.name for p in POLICIES if p.enforcement_level == EnforcementLevel.ADVISORY)
