"""Secret material only ever as Pulumi secrets; never in EC2 user-data, ConfigMaps or pod specs.

`no-plaintext-secrets` needs to know which inputs are Pulumi secrets. The offline adapter knows
(the mock engine records secret paths). The real policy pack does not: pulumi-policy 1.21 for
Python unwraps secrets before `validate` runs (policy.py `Analyze` -> `deserialize_properties`
without `proxy_secrets`), so there the policy declares itself not applicable and CI's offline
run is the enforcement point (docs/adr: policies offline and in the pack).

`user-data-without-secrets` needs no such knowledge: EC2 serves user-data in plain text to
anyone with `ec2:DescribeInstanceAttribute` and to every process that reaches the instance
metadata service, whatever Pulumi's state says. Nodes should fetch secrets at boot (Secrets
Manager / SSM with their instance role).

`secrets-only-in-secret-objects` is the same rule inside the cluster: ConfigMaps and pod specs
(env values, args, annotations of Pods, Deployments, DaemonSets, Jobs...) are readable by the
built-in `view` role, which is bound widely precisely because it reads no Secret
(components/policies/rbac.py). Secret material there, Pulumi secret or not, goes to a Secret
referenced through `valueFrom.secretKeyRef`, `envFrom.secretRef` or a Secret volume.

All three read the one credential recogniser (components/settings/credentials.py, which the
settings' add-on values rule reads too): material by shape (`findings`, through every encoding),
a literal under a key, variable, flag or file name that says credential in structured inputs and
objects (`credential_literals`), and in text (`credential_assignments`): the files user-data
writes, a ConfigMap's files, a container's args. docs/policies.md, "What counts as a credential",
lists what each judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from ..settings.credentials import credential_assignments, credential_literals, findings
from ..tables import tokens
from .aws_nodes import NODE_TYPES
from .k8s_objects import POD_SPEC_PATHS, K8sObject, objects
from .props import decode_user_data, leaves, under

STACK = tokens.PULUMI_STACK


def dotted(path: tuple[Any, ...]) -> str:
    """A path of `credential_literals` as `leaves` writes it: `a.b[0].c`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def secret_paths_of(args: Any) -> frozenset[str] | None:
    """Input paths that are Pulumi secrets, when the caller knows them (offline); else None."""
    paths = getattr(args, "secret_paths", None)
    return frozenset(paths) if paths is not None else None


def plaintext_secret_problems(resource_type: str, props: Mapping[str, Any], secret_paths: frozenset[str]) -> list[str]:
    if "$" in secret_paths:
        return []
    problems = []
    what = "stack output" if resource_type == STACK else "input"
    for path, value in leaves(props):
        if not isinstance(value, str) or under(path, secret_paths):
            continue
        # findings decodes what consumers decode (launch templates' base64 user-data, gzip...).
        if kinds := findings(value):
            problems.append(f"{what} {path} holds {', '.join(kinds)} but is not a Pulumi secret; "
                            "wrap it with pulumi.Output.secret (or mark the output secret)")
    for parts, name in credential_literals(props):
        if not under(path := dotted(parts), secret_paths):
            problems.append(f"{what} {path} is a literal {name} but not a Pulumi secret; wrap it with "
                            "pulumi.Output.secret, or reference a Secret")
    return problems


def user_data_secret_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    if resource_type not in NODE_TYPES:
        return []
    text = decode_user_data(props)
    if not text:
        return []
    problems = []
    if kinds := findings(text):
        problems.append(f"user-data carries {', '.join(kinds)}: EC2 exposes user-data in plain text (API and metadata "
                        "service); store it in Secrets Manager/SSM and fetch it at boot with the instance role")
    # The files a node writes (cloud-init write_files in any encoding, heredocs, env files): a
    # literal under a credential name, whatever the file is called.
    if names := credential_assignments(text):
        problems.append(f"user-data writes {', '.join(names)} as a literal value: EC2 exposes user-data in plain "
                        "text; write a reference instead and fetch the value at boot with the instance role "
                        "(Secrets Manager/SSM)")
    return problems


# Kinds `view` reads whole (bootstrap policy `system:aggregate-to-view`): ConfigMaps and every
# pod-carrying kind but PodTemplate, whose pod spec carries env values and args.
VIEWABLE_KINDS = frozenset({"ConfigMap", *POD_SPEC_PATHS}) - {"PodTemplate"}


def viewable_secret_problems(objs: list[K8sObject]) -> list[tuple[str, str]]:
    """(urn, message) for secret material in ConfigMaps and pod specs."""
    problems = []
    for o in objs:
        if o.kind not in VIEWABLE_KINDS:
            continue
        named = {dotted(parts): name for parts, name in credential_literals(o.obj)}
        for path, name in named.items():
            problems.append((o.urn, f"{o} {path} is a literal {name}: anyone with the view role reads it; use "
                                    "valueFrom.secretKeyRef (or a Secret for envFrom)"))
        for path, value in leaves(o.obj):
            if not isinstance(value, str) or path in named:
                continue
            if kinds := findings(value):
                problems.append((o.urn, f"{o} {path} holds {', '.join(kinds)}: anyone with the view role reads it; "
                                        "keep it in a Secret and reference that"))
            elif names := credential_assignments(value):  # a ConfigMap's file, a container's args
                problems.append((o.urn, f"{o} {path} writes {', '.join(names)} as a literal value: anyone with the "
                                        "view role reads it; keep it in a Secret and reference that"))
    return problems


def validate_no_plaintext_secrets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    secret_paths = secret_paths_of(args)
    if secret_paths is None:
        args.not_applicable("pulumi-policy (Python) unwraps secrets before validation; "
                            "enforced by the offline policy run (tests/unit/policies)")
        return
    for problem in plaintext_secret_problems(args.resource_type, args.props, secret_paths):
        report_violation(problem, None)


def validate_user_data_without_secrets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in user_data_secret_problems(args.resource_type, args.props):
        report_violation(problem, None)


def validate_secrets_only_in_secret_objects(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for urn, message in viewable_secret_problems(objects(args.resources)[0]):
        report_violation(message, urn)


NO_PLAINTEXT_SECRETS = ResourceValidationPolicy(
    name="no-plaintext-secrets",
    description="Keys, tokens and kubeconfigs appear only as Pulumi secrets (inputs, user-data, stack outputs).",
    validate=validate_no_plaintext_secrets,
    enforcement_level=EnforcementLevel.MANDATORY,
)
USER_DATA_WITHOUT_SECRETS = ResourceValidationPolicy(
    name="user-data-without-secrets",
    description="EC2 user-data carries no secret material at all, not even as a Pulumi secret.",
    validate=validate_user_data_without_secrets,
    enforcement_level=EnforcementLevel.MANDATORY,
)
SECRETS_ONLY_IN_SECRET_OBJECTS = StackValidationPolicy(
    name="secrets-only-in-secret-objects",
    description="ConfigMaps and pod specs (env values, args) carry no secret material, not even as a Pulumi secret.",
    validate=validate_secrets_only_in_secret_objects,
    enforcement_level=EnforcementLevel.MANDATORY,
)
