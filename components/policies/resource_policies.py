"""Resource-based policies open to everyone: a secret, key, bucket (queue, topic, repository) any
AWS principal of any account may use.

A resource policy grants to principals it names, in any account (IAM User Guide, "Policy evaluation
logic", cross-account: a resource policy alone suffices for a principal of the same account, and
with the other account's identity policy for one outside it). So an Allow whose principal is
everyone hands the resource to every AWS account unless a Condition pins the caller to this
account or organisation. Open means (IAM User Guide, "AWS JSON policy elements: Principal"):
`"Principal": "*"`, `{"AWS": "*"}` (or a list holding `*`), any principal value with a wildcard
(IAM refuses partial wildcards such as `arn:aws:iam::*:root`, but the intent is everyone), and
`NotPrincipal` with Allow (everyone but a list). Deny statements open nothing.

Narrowing (IAM User Guide, "AWS global condition context keys"; KMS Developer Guide, "kms:CallerAccount"):
a condition on the caller's account or organisation (`aws:PrincipalAccount`, `aws:PrincipalOrgID`,
`aws:PrincipalOrgPaths`, `aws:PrincipalArn` naming an account, `aws:SourceAccount`,
`aws:SourceOrgID`, `aws:SourceOrgPaths`, `aws:SourceArn` naming an account, `kms:CallerAccount`)
or on the network it must come through (`aws:SourceVpce`, `aws:SourceVpc`), with a positive operator
(`StringEquals`, `StringLike`, `StringEqualsIgnoreCase`, `ArnEquals`, `ArnLike`, optionally
`ForAnyValue:`) and concrete values (no `*`, `?` in an account or organisation id; `${aws:ResourceAccount}`
and `${aws:ResourceOrgID}` count: they name the resource's own). What does not narrow: an
`...IfExists` operator (true when the key is absent, IAM User Guide "...IfExists condition
operators"), `ForAllValues:` (true for an absent key, "Multivalued context keys"), negated operators
(`StringNotEquals`: everyone else), `Null`, any other key (`aws:SourceIp` limits a network, not an
account). A Deny of the same actions and resources to everyone outside the account or organisation
(`StringNotEquals` on such a key; `...IfExists` and `ForAllValues:` only make a Deny stricter)
narrows the whole policy, as S3 bucket policy examples write it.

An explicit other account (`arn:aws:iam::111122223333:root`) is a deliberate, named grant, not
everyone: the plan does not know the stack's own account (the mock engine's is fake), so it is not
judged here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from ..tables import tokens
from .props import is_seq, is_unknown

# (resource type, what it holds): each carries its policy document in `policy` (pulumi-aws 7.x).
RESOURCE_POLICY_TYPES = {
    tokens.AWS_SECRETSMANAGER_SECRET_POLICY: "secret",
    tokens.AWS_SECRETSMANAGER_SECRET: "secret",
    tokens.AWS_KMS_KEY: "KMS key",
    tokens.AWS_KMS_KEY_POLICY: "KMS key",
    tokens.AWS_S3_BUCKET_POLICY: "bucket",
    tokens.AWS_S3_BUCKET: "bucket",
    tokens.AWS_S3_BUCKET_V2: "bucket",
    tokens.AWS_ECR_REPOSITORY_POLICY: "image repository",
    tokens.AWS_SQS_QUEUE_POLICY: "queue",
    tokens.AWS_SQS_QUEUE: "queue",
    tokens.AWS_SNS_TOPIC_POLICY: "topic",
    tokens.AWS_SNS_TOPIC: "topic",
}
ACCOUNT_KEYS = frozenset(k.lower() for k in (
    "aws:PrincipalAccount", "aws:PrincipalOrgID", "aws:PrincipalOrgPaths", "aws:SourceAccount", "aws:SourceOrgID",
    "aws:SourceOrgPaths", "kms:CallerAccount", "aws:SourceVpce", "aws:SourceVpc",
))
ARN_KEYS = frozenset({"aws:principalarn", "aws:sourcearn"})
POSITIVE = frozenset({"stringequals", "stringlike", "stringequalsignorecase", "arnequals", "arnlike"})
NEGATED = frozenset({"stringnotequals", "stringnotlike", "stringnotequalsignorecase", "arnnotequals", "arnnotlike"})
OWN = frozenset({"${aws:resourceaccount}", "${aws:resourceorgid}", "${aws:resourceorgpaths}"})
# An ARN's account field: 12 digits, no wildcard (arn:partition:service:region:account:resource).
_ARN_ACCOUNT = re.compile(r"^arn:[^:]+:[^:]*:[^:]*:(\d{12}):")


def _as_list(value: Any) -> list[Any]:
    return list(value) if is_seq(value) else [value]


def _matches(pattern: str, value: str) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.IGNORECASE | re.DOTALL) is not None


def open_principal(statement: Mapping[str, Any]) -> str | None:
    """How an Allow statement's principal is everyone (None: it names someone)."""
    if "NotPrincipal" in statement:
        return "NotPrincipal (everyone but a list)"
    principal = statement.get("Principal")
    if isinstance(principal, str):
        return "Principal '*'" if "*" in principal else None
    if isinstance(principal, Mapping):
        for kind, values in principal.items():
            for v in _as_list(values):
                if isinstance(v, str) and "*" in v:
                    return f"Principal {{{kind!s}: '{v}'}}"
    return None


def _concrete(key: str, value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    if value.lower() in OWN:
        return True
    if key in ARN_KEYS:
        return _ARN_ACCOUNT.match(value) is not None
    return "*" not in value and "?" not in value and "$" not in value


def _narrowing(conditions: Any, deny: bool = False) -> bool:
    """A condition block with one `operator: {key: values}` that pins the caller's account/org: for
    an Allow, a positive match that is false when the key is absent; for a Deny, a negated match
    that is true when it is absent (`...IfExists`, `ForAllValues:` only make a Deny stricter)."""
    if not isinstance(conditions, Mapping):
        return False
    for operator, block in conditions.items():
        qualifier, _, base = str(operator).lower().rpartition(":")
        if deny:
            if qualifier not in ("", "forallvalues") or base.removesuffix("ifexists") not in NEGATED:
                continue
        elif qualifier not in ("", "foranyvalue") or base not in POSITIVE:
            continue
        if not isinstance(block, Mapping):
            continue
        for key, values in block.items():
            k = str(key).lower()  # condition keys are case-insensitive (IAM User Guide, "Condition")
            listed = _as_list(values)
            if (k in ACCOUNT_KEYS or k in ARN_KEYS) and listed and all(_concrete(k, v) for v in listed):
                return True
    return False


def _covers(patterns: list[Any], values: list[Any]) -> bool:
    return all(isinstance(v, str) and any(isinstance(p, str) and _matches(p, v) for p in patterns) for v in values)


def _guarded(allow: Mapping[str, Any], statements: list[Mapping[str, Any]]) -> bool:
    """A Deny to everyone outside the account/org of every action and resource the Allow grants."""
    actions = _as_list(allow.get("Action"))
    resources = _as_list(allow.get("Resource", "*"))
    for deny in statements:
        if deny.get("Effect") != "Deny" or open_principal(deny) is None or "NotAction" in deny:
            continue
        if not _covers(_as_list(deny.get("Action")), actions):
            continue
        if "NotResource" in deny or not _covers(_as_list(deny.get("Resource", "*")), resources):
            continue
        if _narrowing(deny.get("Condition"), deny=True):
            return True
    return False


def public_problems(where: str, raw: Any, holds: str) -> list[str]:
    if raw is None or is_unknown(raw):
        return []
    document = raw
    if isinstance(raw, str):
        try:
            document = json.loads(raw)
        except json.JSONDecodeError:
            return [f"{where} is not valid JSON; it cannot be reviewed"]
    if not isinstance(document, Mapping):
        return []
    statements = [s for s in _as_list(document.get("Statement")) if isinstance(s, Mapping)]
    problems = []
    for i, st in enumerate(statements):
        if st.get("Effect") != "Allow" or (opened := open_principal(st)) is None:
            continue
        if _narrowing(st.get("Condition")) or _guarded(st, statements):
            continue
        sid = f" ({st['Sid']})" if st.get("Sid") else ""
        problems.append(f"{where} Statement[{i}]{sid} opens the {holds} to every AWS account: {opened} without a "
                        "Condition pinning the caller to this account or organisation (aws:PrincipalAccount, "
                        "aws:PrincipalOrgID, aws:SourceVpce...)")
    return problems


# Identity policies: AWS refuses a Principal in them (IAM User Guide, "Principal": "You cannot use
# the Principal element in an identity-based policy"), so they open nothing to anyone.
IDENTITY_POLICY_TYPES = frozenset({tokens.AWS_IAM_POLICY, tokens.AWS_IAM_ROLE_POLICY, tokens.AWS_IAM_USER_POLICY,
                                   tokens.AWS_IAM_GROUP_POLICY})
MAX_DEPTH = 8

# Grants that make a resource public without a policy document: (type, field path, public values,
# fields that narrow the grant, what it opens); `[]` in a path is every element of a list.
# Lambda AddPermission (Lambda Developer Guide, "Granting function access to other accounts": a
# principal of `*` without SourceAccount/SourceArn/PrincipalOrgID is any account), layer
# permissions (principal `*` without an organization), AMI launch permissions and Image Builder's
# distribution (EC2 User Guide, "Make your AMI public": group `all`), RDS snapshot sharing
# (`all` in the restore attribute: RDS User Guide, "Sharing a DB snapshot").
PUBLIC_GRANTS: tuple[tuple[str, str, frozenset[str], tuple[str, ...], str], ...] = (
    (tokens.AWS_LAMBDA_PERMISSION, "principal", frozenset({"*"}),
     ("sourceAccount", "sourceArn", "principalOrgId"), "function"),
    (tokens.AWS_LAMBDA_LAYER_VERSION_PERMISSION, "principal", frozenset({"*"}),
     ("organizationId",), "layer"),
    (tokens.AWS_EC2_AMI_LAUNCH_PERMISSION, "group", frozenset({"all"}), (), "AMI"),
    (tokens.AWS_RDS_SNAPSHOT, "sharedAccounts", frozenset({"all"}), (), "DB snapshot"),
    (tokens.AWS_RDS_CLUSTER_SNAPSHOT, "sharedAccounts", frozenset({"all"}), (), "DB cluster snapshot"),
    # every Region's launch permission of the AMIs a distribution configuration publishes
    (tokens.AWS_IMAGEBUILDER_DISTRIBUTION_CONFIGURATION,
     "distributions[].amiDistributionConfiguration.launchPermission.userGroups", frozenset({"all"}), (),
     "AMIs it builds"),
)


def _is_policy_key(key: str) -> bool:
    low = key.lower()
    return low.endswith(("policy", "policies", "policydocument", "policytext"))


def policy_documents(props: Any, path: str = "", depth: int = 0) -> list[tuple[str, Any, bool]]:
    """(path, raw document, at a policy-named key) of every policy document in `props`, judged by
    what it is: a mapping, or JSON text, with a `Statement`; at a key named like a policy, any text."""
    out: list[tuple[str, Any, bool]] = []
    if depth > MAX_DEPTH or not isinstance(props, Mapping):
        return out
    for key, value in props.items():
        here = f"{path}.{key}" if path else str(key)
        named = _is_policy_key(str(key))
        if isinstance(value, str) and not is_unknown(value):
            if named or ('"Statement"' in value and value.lstrip().startswith("{")):
                out.append((here, value, named))
        elif isinstance(value, Mapping):
            if "Statement" in value:
                out.append((here, value, named))
            else:
                out += policy_documents(value, here, depth + 1)
        elif is_seq(value):
            for i, item in enumerate(value):
                out += policy_documents({f"{key}[{i}]": item}, path, depth + 1)
    return out


def _values(value: Any) -> list[str]:
    return [v.lower() for v in _as_list(value) if isinstance(v, str)]


def _at(node: Any, path: str, here: str = "") -> list[tuple[str, Any]]:
    """(concrete path, value) of `path` in `node`; `name[]` walks every element of that list."""
    head, _, rest = path.partition(".")
    key, each = head.removesuffix("[]"), head.endswith("[]")
    if not isinstance(node, Mapping) or key not in node:
        return []
    at = f"{here}.{key}" if here else key
    if not each:
        return _at(node[key], rest, at) if rest else [(at, node[key])]
    return [found for i, item in enumerate(_as_list(node[key])) for found in _at(item, rest, f"{at}[{i}]")]


def grant_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for rtype, fld, public, narrowing, holds in PUBLIC_GRANTS:
        if resource_type != rtype:
            continue
        if any(props.get(n) not in (None, "") and not is_unknown(props.get(n)) for n in narrowing):
            continue
        for where, value in _at(props, fld):
            if set(_values(value)) & public:
                out.append(f"{where} {value!r} opens the {holds} to every AWS account"
                           + (f" (no {', '.join(narrowing)} narrows it)" if narrowing else ""))
    return out


def resource_policy_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Every resource policy of an AWS resource, found by what it is, wherever the type keeps it, and
    every grant that makes the resource public without one."""
    if not resource_type.startswith("aws:") or resource_type in IDENTITY_POLICY_TYPES:
        return []
    holds = RESOURCE_POLICY_TYPES.get(resource_type) or resource_type.rsplit(":", 1)[-1]
    out: list[str] = []
    for where, raw, named in policy_documents(props):
        if isinstance(raw, str) and not named:
            try:
                json.loads(raw)
            except json.JSONDecodeError:
                continue  # text that only mentions a Statement
        out += public_problems(where, raw, holds)
    return out + grant_problems(resource_type, props)


def validate_no_public_resource_policy(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in resource_policy_problems(args.resource_type, args.props):
        report_violation(problem, None)


NO_PUBLIC_RESOURCE_POLICY = ResourceValidationPolicy(
    name="no-public-resource-policy",
    description="No AWS resource's policy (found wherever the type keeps it: bucket, key, secret, queue, "
                "topic, repository, access point, role trust policy...) allows every AWS account without a "
                "condition pinning the caller to this account or organisation, and no grant (Lambda and layer "
                "permissions, AMI launch permissions, snapshot sharing) makes a resource public.",
    validate=validate_no_public_resource_policy,
    enforcement_level=EnforcementLevel.MANDATORY,
)
