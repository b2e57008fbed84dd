"""IAM: no statement allows every action on every resource; node roles hold no broad managed policy.

Policy documents appear as JSON strings on `aws:iam/policy:Policy.policy`,
`aws:iam/rolePolicy:RolePolicy.policy`, `aws:iam/userPolicy`, `aws:iam/groupPolicy` and
`aws:iam/role:Role.inlinePolicies[].policy`, `aws:s3/bucketPolicy:BucketPolicy.policy`;
AWS-managed admin policies arrive through `*PolicyAttachment.policyArn` and `Role.managedPolicyArns`.

`node-role-managed-policies` judges what a node role may do through the managed policies attached
to it (components/policies/managed_policies.py): a node role is a role EC2 may assume (trust policy
with the `ec2.amazonaws.com` service principal, `ec2.amazonaws.com.cn` in China) or one an instance
profile of the stack carries. Attachments: `RolePolicyAttachment`, `PolicyAttachment.roles`,
`RolePolicyAttachmentsExclusive`, `Role.managedPolicyArns`; inline documents (`RolePolicy`,
`Role.inlinePolicies`) are judged by the same rule. Which role an attachment names is read from its
property dependencies (the real engine), else from its dependencies, else by name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from ..tables import tokens
from .managed_policies import aws_managed, broad_grants, parse_policy_arn, table_document
from .props import get, is_seq, is_unknown, items

DOCUMENT_TYPES = {
    tokens.AWS_IAM_POLICY,
    tokens.AWS_IAM_ROLE_POLICY,
    tokens.AWS_IAM_USER_POLICY,
    tokens.AWS_IAM_GROUP_POLICY,
    tokens.AWS_S3_BUCKET_POLICY,  # a resource policy: `*` on `*` there is just as open
}
ATTACHMENT_TYPES = {
    tokens.AWS_IAM_ROLE_POLICY_ATTACHMENT,
    tokens.AWS_IAM_USER_POLICY_ATTACHMENT,
    tokens.AWS_IAM_GROUP_POLICY_ATTACHMENT,
    tokens.AWS_IAM_POLICY_ATTACHMENT,
}
ROLE = tokens.AWS_IAM_ROLE
# AWS-managed policies that are `*` on `*` in all but name (any partition: the ARN's tail decides).
# Matched case-insensitively: IAM names are ("IAM identifiers"), so a case variant is the same policy.
ADMIN_POLICIES = ("/administratoraccess", "/administratoraccess-amplify", "/administratoraccess-awselasticbeanstalk",
                  "/poweruseraccess", "/iamfullaccess")
# Judged by what a pattern MATCHES, as IAM does (case-insensitive `*` and `?`; IAM User Guide, "IAM
# JSON policy elements: Action" and "Resource"): an action no policy names on purpose, and an ARN of
# a service that does not exist yet. A pattern that matches them matches everything.
ANY_ACTION = "zzznewservice:ZzzNewAction"
ANY_ARN = "arn:aws:zzznewservice:zz-new-1:123456789012:thing/zzz"
# Actions that let a principal grant itself anything else (IAM privilege escalation): allowed on
# every resource they are as good as `*`.
ESCALATION = ("iam:AttachRolePolicy", "iam:AttachUserPolicy", "iam:PutRolePolicy", "iam:PutUserPolicy",
              "iam:CreatePolicyVersion", "iam:UpdateAssumeRolePolicy", "iam:CreateAccessKey", "iam:PassRole",
              "sts:AssumeRole")
# "Every resource" in disguise: a pattern that covers every resource an action can act on, in every
# account (and region), is as good as `*` for that action. What each escalating action acts on, as
# an ARN's resource part (Service Authorization Reference, "Actions defined by AWS Identity and
# Access Management" and "... by AWS Security Token Service": the resource type of each action).
# IAM and STS ARNs carry no region (arn:<partition>:iam::<account>:role/<path><name>).
ACTS_ON = {"iam:AttachRolePolicy": "role", "iam:PutRolePolicy": "role", "iam:UpdateAssumeRolePolicy": "role",
           "iam:PassRole": "role", "sts:AssumeRole": "role", "iam:AttachUserPolicy": "user",
           "iam:PutUserPolicy": "user", "iam:CreateAccessKey": "user", "iam:CreatePolicyVersion": "policy"}
# Judged by what the pattern MATCHES: any two accounts, a region no ARN names yet, a resource type no
# service has yet (with a path, as IAM names may carry one), in each partition (aws, aws-cn, aws-us-gov).
ACCOUNTS = ("123456789012", "210987654321")
NEW_REGION = "zz-new-1"
NEW_RESOURCE = "zzznewtype/zzz/new-path/zzz"
PARTITIONS = ("aws", "aws-cn", "aws-us-gov")


def documents(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    if resource_type in DOCUMENT_TYPES:
        yield "policy", props.get("policy")
    if resource_type == ROLE:
        for i, inline in enumerate(items(props, "inlinePolicies")):
            if isinstance(inline, Mapping):
                yield f"inlinePolicies[{i}].policy", inline.get("policy")


def _as_list(value: Any) -> list[Any]:
    return list(value) if is_seq(value) else [value]


def matches(pattern: str, value: str) -> bool:
    """IAM wildcard matching: `*` any run, `?` one character, case-insensitive, everything else literal."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.IGNORECASE | re.DOTALL) is not None


def _wild_action(action: Any) -> bool:
    return isinstance(action, str) and matches(action, ANY_ACTION)


def _escalating(actions: list[Any]) -> list[str]:
    return [e for e in ESCALATION if any(isinstance(a, str) and matches(a, e) for a in actions)]


def _wild_resource(resource: Any) -> bool:
    return isinstance(resource, str) and (resource == "*" or matches(resource, ANY_ARN))


def service_wide(resource: Any) -> str | None:
    """What every resource `resource` matches amounts to, in every account and region of some
    partition: "every <service> resource" (`arn:aws:s3:::*`, `arn:aws:ec2:*:*:*`, `arn:*:iam::*:*`) or
    "every <type> of <service>" with the account wildcarded (`arn:aws:secretsmanager:*:*:secret:*`,
    `arn:aws:iam::*:role/*`); None when it names less (an account, a region, a name, a bucket).
    Region and account may be absent from a service's ARNs (S3 buckets: neither; IAM: no region): an
    empty segment then covers them all, but only the whole service, never "a type": an S3 key prefix
    is a bucket's name, not a type."""
    if not isinstance(resource, str):
        return None
    parts = resource.split(":", 5)
    if len(parts) != 6 or parts[0].lower() != "arn":
        return None
    _, partition, service, region, account, rest = parts
    if not any(matches(partition, p) for p in PARTITIONS) or any(c in service for c in "*?"):
        return None
    if not (region == "" or matches(region, NEW_REGION)):
        return None
    any_account = account != "" and all(matches(account, a) for a in ACCOUNTS)
    if (account == "" or any_account) and matches(rest, NEW_RESOURCE):
        return f"every {service.lower()} resource"
    literal = re.split(r"[*?]", rest, maxsplit=1)[0]
    if any_account and literal != rest and literal[-1:] in ("/", ":") and matches(rest[len(literal):], NEW_RESOURCE):
        return f"every {literal[:-1]} of {service.lower()}"
    return None


def _covers_every_target(resource: Any, action: str) -> bool:
    """Whether `resource` names every resource `action` acts on (every role, user or policy) in every
    account of some partition: e.g. `arn:aws:iam::*:role/*` for iam:PassRole."""
    if not isinstance(resource, str) or action not in ACTS_ON:
        return False
    service = action.split(":", 1)[0]
    kind = ACTS_ON[action]
    return any(all(matches(resource, f"arn:{p}:{svc}::{a}:{kind}/{NEW_RESOURCE}") for a in ACCOUNTS)
               for p in PARTITIONS for svc in {service, "iam"})


def statement_problem(statement: Mapping[str, Any]) -> str | None:
    """Allow statements whose actions AND resources are unbounded. NotAction/NotResource count as
    unbounded: they grant everything except a list, including whatever AWS adds later."""
    if statement.get("Effect") != "Allow":
        return None
    listed = _as_list(statement.get("Action"))
    if wild := [a for a in listed if _wild_action(a)]:
        actions = f"Action '{wild[0]}'" + ("" if wild[0] == "*" else " (every action)")
    elif "NotAction" in statement:
        actions = "NotAction (every action but a list)"
    elif escalating := _escalating(listed):
        actions = f"{', '.join(escalating)} (lets it grant itself anything)"
    else:
        return None
    resources = _as_list(statement.get("Resource"))
    if wild_resource := [r for r in resources if _wild_resource(r)]:
        shown = wild_resource[0]
        return f"allows {actions} on Resource '{shown}'" + ("" if shown == "*" else " (every resource)")
    if "NotResource" in statement:
        return f"allows {actions} on NotResource (every resource but a list)"
    if wild or "NotAction" in statement:
        for r in resources:
            if (what := service_wide(r)) is not None:
                return f"allows {actions} on Resource '{r}' ({what}, in every account and region)"
    for action in _escalating(listed):
        for r in resources:
            if _covers_every_target(r, action):
                return (f"allows {action} on Resource '{r}' (every {ACTS_ON[action]} of every account): as good "
                        "as '*' for it")
    return None


def _parsed(where: str, document: Any) -> tuple[Mapping[str, Any] | None, list[str]]:
    """A policy document as a mapping (None: unknown, absent or not a mapping), or why it is unreadable."""
    if document is None or is_unknown(document):
        return None, []
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return None, [f"{where} is not valid JSON; it cannot be reviewed"]
    return (document if isinstance(document, Mapping) else None), []


def document_problems(where: str, raw: Any) -> list[str]:
    document, problems = _parsed(where, raw)
    if document is None:
        return problems
    for i, statement in enumerate(_as_list(document.get("Statement"))):
        if isinstance(statement, Mapping):
            problem = statement_problem(statement)
            if problem:
                sid = f" ({statement['Sid']})" if statement.get("Sid") else ""
                problems.append(f"{where} Statement[{i}]{sid} {problem}")
    return problems


def trust_problems(raw: Any) -> list[str]:
    """A role anyone in any account may assume: Allow, a `*` principal, no Condition."""
    document, problems = _parsed("assumeRolePolicy", raw)
    for i, st in enumerate(_as_list(document.get("Statement")) if document is not None else []):
        if not isinstance(st, Mapping) or st.get("Effect") != "Allow" or st.get("Condition"):
            continue
        principal = st.get("Principal")
        values = [principal] if isinstance(principal, str) else [
            v for vs in (principal or {}).values() for v in _as_list(vs)] if isinstance(principal, Mapping) else []
        # IAM allows no partial wildcard in a principal ("*" alone): IAM User Guide, "Principal".
        if "*" in values:
            problems.append(f"assumeRolePolicy Statement[{i}] lets any principal of any account assume the role "
                            "(Principal '*' without a Condition)")
    return problems


def wildcard_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    problems = [p for where, doc in documents(resource_type, props) for p in document_problems(where, doc)]
    if resource_type == ROLE:
        problems += trust_problems(props.get("assumeRolePolicy"))
    arns = [props.get("policyArn")] if resource_type in ATTACHMENT_TYPES else []
    if resource_type == ROLE:
        arns += items(props, "managedPolicyArns")
    for arn in arns:
        if isinstance(arn, str) and arn.startswith("arn:") and arn.lower().endswith(ADMIN_POLICIES):
            problems.append(f"attaches {arn.rsplit('/', 1)[-1]}, which allows (nearly) '*' on '*'")
    return problems


def validate_no_wildcard_iam(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in wildcard_problems(args.resource_type, args.props):
        report_violation(problem, None)


NO_WILDCARD_IAM = ResourceValidationPolicy(
    name="no-wildcard-iam",
    description="No IAM policy allows '*' actions on '*' resources (nor AWS admin policies).",
    validate=validate_no_wildcard_iam,
    enforcement_level=EnforcementLevel.MANDATORY,
)


# --- node roles: managed policies by what they grant ---------------------------------------------

POLICY = tokens.AWS_IAM_POLICY
ROLE_POLICY = tokens.AWS_IAM_ROLE_POLICY
INSTANCE_PROFILE = tokens.AWS_IAM_INSTANCE_PROFILE
ROLE_ATTACHMENT = tokens.AWS_IAM_ROLE_POLICY_ATTACHMENT
POLICY_ATTACHMENT = tokens.AWS_IAM_POLICY_ATTACHMENT
EXCLUSIVE_ATTACHMENTS = tokens.AWS_IAM_ROLE_POLICY_ATTACHMENTS_EXCLUSIVE
# Where each resource names its role(s) and its managed policy ARN(s) (pulumi-aws 7.x wire names).
ROLE_KEYS = {ROLE_ATTACHMENT: "role", POLICY_ATTACHMENT: "roles", EXCLUSIVE_ATTACHMENTS: "roleName",
             ROLE_POLICY: "role", INSTANCE_PROFILE: "role"}
ARN_KEYS = {ROLE_ATTACHMENT: "policyArn", POLICY_ATTACHMENT: "policyArn", EXCLUSIVE_ATTACHMENTS: "policyArns",
            ROLE: "managedPolicyArns", tokens.AWS_IAM_USER_POLICY_ATTACHMENT: "policyArn"}
# IAM users: principals with standing credentials (access keys, passwords), held to the node roles'
# rules. Where each resource names its user(s) (pulumi-aws 7.x: UserPolicy.user,
# UserPolicyAttachment.user, PolicyAttachment.users).
USER = tokens.AWS_IAM_USER
USER_POLICY = tokens.AWS_IAM_USER_POLICY
USER_KEYS = {USER_POLICY: "user", tokens.AWS_IAM_USER_POLICY_ATTACHMENT: "user", POLICY_ATTACHMENT: "users"}
UNKNOWN = "<computed>"
# Pulumi auto-names a resource `<logical name>-<7 hex>` (the mock engine: 8): how an id made from
# an auto-named role reads when it is known.
_AUTONAME = re.compile(r"^(?P<logical>.+)-[0-9a-f]{7,8}$")


@dataclass(frozen=True, eq=False)  # identity: nodes are dict keys
class Node:
    """A resource as this policy reads it (a PolicyResource, or a test's hand-made one)."""

    type: str
    urn: str
    name: str
    props: Mapping[str, Any]
    deps: tuple[str, ...] = ()
    prop_deps: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def known(value: Any) -> Any:
    """A plain copy of inputs with every unknown value as `<computed>`. The real pack's proxies raise
    on reading one (pulumi_policy/proxy.py `_raise_if_unknown`), which would skip the whole stack
    policy in a preview where every new role's id is unknown."""
    def read(container: Any, key: Any) -> Any:
        try:
            return known(container[key])
        except UnknownValueError:
            return UNKNOWN
    if isinstance(value, Mapping):
        return {k: read(value, k) for k in value}
    if is_seq(value):
        return [read(value, i) for i in range(len(value))]
    return value


def nodes_of(resources: Any) -> list[Node]:
    """The IAM resources among `resources` (only they are read: a stack's other inputs can be large)."""
    wanted = {ROLE, POLICY, USER, *ROLE_KEYS, *ARN_KEYS, *USER_KEYS}
    return [Node(r.resource_type, r.urn, r.name, known(r.props), tuple(d.urn for d in (r.dependencies or [])),
                 {k: tuple(d.urn for d in v) for k, v in (r.property_dependencies or {}).items()})
            for r in resources if r.resource_type in wanted]


def ec2_may_assume(raw: Any) -> bool:
    """The trust policy lets EC2 assume the role: an instance role (EC2 User Guide, "IAM roles for
    Amazon EC2"; the China partition's service principal ends in `.com.cn`)."""
    document, _ = _parsed("assumeRolePolicy", raw)
    for st in _as_list(document.get("Statement")) if document is not None else []:
        if not isinstance(st, Mapping) or st.get("Effect") != "Allow":
            continue
        if not any(isinstance(a, str) and matches(a, "sts:AssumeRole") for a in _as_list(st.get("Action"))):
            continue
        principal = st.get("Principal")
        services = _as_list(principal.get("Service")) if isinstance(principal, Mapping) else []
        if any(isinstance(s, str) and s.lower() in ("ec2.amazonaws.com", "ec2.amazonaws.com.cn") for s in services):
            return True
    return False


def _values(value: Any) -> list[Any]:
    return list(value) if is_seq(value) else [] if value is None else [value]


def _tail(value: str) -> str:
    return value.rsplit("/", 1)[-1]  # a role or policy ARN's name; a plain name is itself


class _Stack:
    def __init__(self, nodes: list[Node]) -> None:
        self.by_urn = {n.urn: n for n in nodes}
        self.roles = [n for n in nodes if n.type == ROLE]
        self.users = [n for n in nodes if n.type == USER]
        self.policies = [n for n in nodes if n.type == POLICY]

    def of_type(self, urns: tuple[str, ...], rtype: str) -> list[Node]:
        return [self.by_urn[u] for u in urns if u in self.by_urn and self.by_urn[u].type == rtype]

    def named(self, candidates: list[Node], value: str) -> Node | None:
        wanted = _tail(value).lower()  # IAM names are case-insensitive ("IAM identifiers")
        for n in candidates:
            own = n.props.get("name")
            auto = _AUTONAME.match(_tail(value))
            if (isinstance(own, str) and own.lower() == wanted) or (auto and auto.group("logical") == n.name):
                return n
        return None

    def referred(self, n: Node, key: str, kind: list[Node]) -> list[Node | str]:
        """What `n`'s `key` names among `kind`: resources of this stack where it can tell, else the
        names themselves (lowercased); unknown values are left out."""
        values = [v for v in _values(n.props.get(key)) if not is_unknown(v)]
        urns = {k.urn for k in kind}
        if by_prop := [self.by_urn[u] for u in n.prop_deps.get(key, ()) if u in urns]:
            return list(by_prop)
        out: list[Node | str] = []
        for v in values:
            if isinstance(v, str) and (found := self.named(kind, v)) is not None:
                out.append(found)
        deps = [self.by_urn[u] for u in n.deps if u in urns]
        if not out and deps and len(deps) == len(_values(n.props.get(key))):
            return list(deps)  # offline: ids are mock names, the dependencies say which
        return out or [v.lower() for v in values if isinstance(v, str)]

    def node_roles(self) -> dict[Node | str, str]:
        """Node roles (a role of the stack, or a role name), each with how it was recognised."""
        found: dict[Node | str, str] = {r: "EC2 may assume it" for r in self.roles
                                        if ec2_may_assume(r.props.get("assumeRolePolicy"))}
        for profile in (n for n in self.by_urn.values() if n.type == INSTANCE_PROFILE):
            for role in self.referred(profile, "role", self.roles):
                found.setdefault(role, f"instance profile {profile.name} carries it")
        return found


def _label(role: Node | str) -> str:
    return f"role {role.name}" if isinstance(role, Node) else f"role {role}"


def _arn_problems(arn: Any) -> list[str]:
    ref = parse_policy_arn(arn)
    if ref is not None and (entry := aws_managed(ref)) is not None:
        return [f"attaches AWS-managed {entry.name}, which allows {g} ({entry.source})"
                for g in broad_grants(table_document(entry))]
    if ref is not None and ref.aws_managed:
        return [f"attaches AWS-managed {ref.name}, which this pack cannot review (not in its table of AWS-managed "
                "policies, components/policies/managed_policies.py): a node role gets only reviewed permissions"]
    return [f"attaches {arn}, a managed policy this pack cannot review (not created in this stack): a node role "
            "gets only reviewed permissions"]


def _document_grants(policy: Node) -> list[str]:
    document, unreadable = _parsed(f"policy {policy.name}", policy.props.get("policy"))
    if document is None:
        return unreadable
    return [f"attaches {policy.name} (created in this stack), which allows {g}" for g in broad_grants(document)]


def _attached(stack: _Stack, n: Node) -> list[str]:
    """Problems of the managed policies `n` attaches."""
    key = ARN_KEYS[n.type]
    raw = _values(n.props.get(key))
    policies = stack.of_type(n.prop_deps.get(key, ()), POLICY)
    if not policies and any(parse_policy_arn(a) is None for a in raw):
        policies = stack.of_type(n.deps, POLICY)
    problems = [p for policy in policies for p in _document_grants(policy)]
    for arn in (a for a in raw if not is_unknown(a)):
        ref = parse_policy_arn(arn)
        if ref is None and policies:
            continue  # the id of a policy judged above (a mock ARN offline)
        if ref is None or not ref.aws_managed:
            named = stack.named(stack.policies, arn) if isinstance(arn, str) else None
            if named is not None:
                problems += [] if named in policies else _document_grants(named)
                continue
        problems += _arn_problems(arn)
    return problems


def node_role_problems(nodes: list[Node]) -> list[tuple[str, str]]:
    """(urn, message) for every broad or unreviewable grant a node role or an IAM user holds."""
    stack = _Stack(nodes)
    node_roles = stack.node_roles()
    if not node_roles:
        return user_problems(stack)
    out: list[tuple[str, str]] = []
    for n in nodes:
        if n.type == ROLE and n in node_roles:
            targets: list[Node | str] = [n]
            for i, inline in enumerate(items(n.props, "inlinePolicies")):
                doc, bad = _parsed(f"inlinePolicies[{i}].policy", get(inline, "policy"))
                out += [(n.urn, f"node role {n.name} ({node_roles[n]}): {p}") for p in bad]
                out += [(n.urn, f"node role {n.name} ({node_roles[n]}): inlinePolicies[{i}] allows {g}")
                        for g in (broad_grants(doc) if doc is not None else [])]
        elif n.type in ROLE_KEYS and n.type != INSTANCE_PROFILE:
            targets = [r for r in stack.referred(n, ROLE_KEYS[n.type], stack.roles) if r in node_roles]
        else:
            continue
        for role in targets:
            why = node_roles[role]
            if n.type == ROLE_POLICY:
                doc, bad = _parsed("policy", n.props.get("policy"))
                problems = bad + [f"inline policy allows {g}" for g in (broad_grants(doc) if doc is not None else [])]
            elif n.type in ARN_KEYS:
                problems = _attached(stack, n)
            else:
                problems = []
            out += [(n.urn, f"node {_label(role)} ({why}) {p}") for p in problems]
    return out + user_problems(stack)


def user_problems(stack: _Stack) -> list[tuple[str, str]]:
    """(urn, message) for every broad or unreviewable grant an IAM user holds: a user's credentials
    do not expire with an instance, so it gets no more than a node role (the backup user's scoped
    bucket policy is the model: components/dr/backup_target.py)."""
    out: list[tuple[str, str]] = []
    for n in stack.by_urn.values():
        if n.type not in USER_KEYS:
            continue
        users = stack.referred(n, USER_KEYS[n.type], stack.users)
        if not users:
            continue
        if n.type == USER_POLICY:
            doc, bad = _parsed("policy", n.props.get("policy"))
            problems = bad + [f"inline policy allows {g}" for g in (broad_grants(doc) if doc is not None else [])]
        else:
            problems = _attached(stack, n)
        for user in users:
            label = f"user {user.name}" if isinstance(user, Node) else f"user {user}"
            out += [(n.urn, f"IAM {label} (standing credentials) {p}") for p in problems]
    return out


def validate_node_role_managed_policies(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for urn, message in node_role_problems(nodes_of(args.resources)):
        report_violation(message, urn)


NODE_ROLE_MANAGED_POLICIES = StackValidationPolicy(
    name="node-role-managed-policies",
    description="Node roles and IAM users (standing credentials) hold no policy that grants a whole service "
                "or reads every secret, and none this pack cannot review.",
    validate=validate_node_role_managed_policies,
    enforcement_level=EnforcementLevel.MANDATORY,
)


# --- role passing and assumption: only this stack's own roles (issue 45) ---------------------------

DELEGATION = ("iam:PassRole", "sts:AssumeRole")  # hands a principal another role's permissions


def _policy_documents(n: Node) -> Iterator[tuple[str, Any]]:
    if n.type in (POLICY, ROLE_POLICY, USER_POLICY):
        yield "policy", n.props.get("policy")
    if n.type == ROLE:
        for i, inline in enumerate(items(n.props, "inlinePolicies")):
            yield f"inlinePolicies[{i}].policy", get(inline, "policy")


def _own_role(stack: _Stack, value: Any) -> bool:
    """`value` names exactly one role of this stack: no wildcard, and its name (the ARN's last path
    segment) is a stack role's explicit name, its auto-name, or (offline, the mock engine's ARNs
    `arn:aws:mock:...:role/<logical>`) its logical name."""
    if not isinstance(value, str) or any(c in value for c in "*?") or is_unknown(value):
        return False
    if stack.named(stack.roles, value) is not None:
        return True
    tail = _tail(value)
    return any(r.name == tail for r in stack.roles)


def delegation_problems(nodes: list[Node]) -> list[tuple[str, str]]:
    """(urn, message) for every Allow of iam:PassRole or sts:AssumeRole (any spelling that matches
    them) on a resource that is not one of this stack's roles, named exactly: a principal that may
    pass or assume roles it was not given grows its own permissions (IAM User Guide, "Granting a user
    permissions to pass a role"). An unknown document (computed in a preview) is not judged."""
    stack = _Stack(nodes)
    out: list[tuple[str, str]] = []
    for n in nodes:
        for where, raw in _policy_documents(n):
            document, _ = _parsed(where, raw)
            if document is None:
                continue
            for i, st in enumerate(_as_list(document.get("Statement"))):
                if not isinstance(st, Mapping) or st.get("Effect") != "Allow":
                    continue
                actions = [a for a in _as_list(st.get("Action")) if isinstance(a, str)]
                granted = [d for d in DELEGATION if any(matches(a, d) for a in actions)]
                if "NotAction" in st and not any(matches(str(a), d) for d in DELEGATION
                                                 for a in _as_list(st.get("NotAction"))):
                    granted = list(DELEGATION)
                if not granted:
                    continue
                if "NotResource" in st:
                    out.append((n.urn, f"{n.name} {where} Statement[{i}] allows {', '.join(granted)} on NotResource "
                                       "(every role but a list); name this stack's roles instead"))
                    continue
                for r in _as_list(st.get("Resource")):
                    if not is_unknown(r) and r != UNKNOWN and not _own_role(stack, r):
                        roles = ", ".join(sorted(x.name for x in stack.roles)) or "none"
                        out.append((n.urn, f"{n.name} {where} Statement[{i}] allows {', '.join(granted)} on '{r}', "
                                           f"which is not one of this stack's roles ({roles}), named exactly"))
    return out


def validate_delegation(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for urn, message in delegation_problems(nodes_of(args.resources)):
        report_violation(message, urn)


IAM_DELEGATES_OWN_ROLES = StackValidationPolicy(
    name="iam-delegates-own-roles",
    description="iam:PassRole and sts:AssumeRole are allowed only on this stack's own roles, each named exactly.",
    validate=validate_delegation,
    enforcement_level=EnforcementLevel.MANDATORY,
)
