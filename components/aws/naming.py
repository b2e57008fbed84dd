"""AWS name and tag rules, and pulumi-aws 7.x auto-naming, for every named type the program creates (pure).

The mock engine never calls the provider's Check, so nothing else applies these offline: a name
that is too long fails only at a real `pulumi preview` (or worse, at `up`). Each rule names its
source: PA = pulumi/pulumi-aws provider/ (v7), TF = terraform-provider-aws internal/service/,
BR = pulumi-terraform-bridge (v3.136), AWS = the service's API reference.

Auto-naming (BR info/autonaming.go): `<logical name>` + "-" + 7 lowercase hex chars, never
truncated; longer than the token's autoname maximum is a Check error. The result must then pass
the same rules as an explicit name (an LB is auto-named up to 255 but AWS allows 32).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..tables import tokens
from ..tables.hashed_names import fit

AUTONAME_SUFFIX = "-abcdef0"  # worst-case shape of "-" + 7 random hex chars (always 8 long)
DEFAULT_AUTONAME_MAX = 255  # PA provider/autonaming.go: every TF `name` without an override

Check = Callable[[str], str | None]  # physical name -> reason, or None


@dataclass(frozen=True)
class NameRule:
    prop: str  # the Pulumi input carrying the name
    max_len: int  # what AWS (or TF's ValidateFunc) accepts
    source: str  # where the rule comes from
    autoname_max: int = DEFAULT_AUTONAME_MAX
    min_len: int = 1
    charset: str | None = None  # full-match regex over the whole name
    charset_text: str = ""
    prefixes: tuple[str, ...] = ()  # forbidden, case-sensitive
    iprefixes: tuple[str, ...] = ()  # forbidden, any case
    suffixes: tuple[str, ...] = ()  # forbidden
    no_edge_hyphen: bool = False
    lower_autoname: bool = False  # S3: transform strings.ToLower before the suffix
    autoname_prefix: str = ""  # KMS alias PostTransform: "alias/" unless already there
    checks: tuple[Check, ...] = ()


def _not_ip(name: str) -> str | None:
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return None
    return "must not be formatted as an IP address"


def _s3_shape(name: str) -> str | None:
    if not (name[:1].isalnum() and name[-1:].isalnum()):
        return "must begin and end with a letter or digit"
    return "can be only one period between labels" if ".." in name else None


_IAM = r"[\w+=,.@-]+"
_ELB = r"[0-9A-Za-z-]+"
NAME_RULES: dict[str, NameRule] = {
    tokens.AWS_LB_LOAD_BALANCER: NameRule(
        "name", 32, "TF elbv2/validate.go validName (PA aliases.go: autonamed with the default 255)",
        charset=_ELB, charset_text="alphanumerics and hyphens", no_edge_hyphen=True, prefixes=("internal-",)),
    tokens.AWS_LB_TARGET_GROUP: NameRule(
        "name", 32, "TF elbv2/validate.go validTargetGroupName; PA aliases.go AutoName(32)",
        autoname_max=32, charset=_ELB, charset_text="alphanumerics and hyphens", no_edge_hyphen=True),
    tokens.AWS_IAM_ROLE: NameRule(
        "name", 64, "TF iam/validate.go validResourceName(64); PA resource_overrides.go AutoName(64)",
        autoname_max=64, charset=_IAM, charset_text="alphanumerics and +=,.@_-"),
    tokens.AWS_IAM_ROLE_POLICY: NameRule(
        "name", 128, "TF iam/role_policy.go validRolePolicyName = validResourceName(128)",
        charset=_IAM, charset_text="alphanumerics and +=,.@_-"),
    tokens.AWS_IAM_INSTANCE_PROFILE: NameRule(
        "name", 128, "TF iam/instance_profile.go validResourceName(128)",
        charset=_IAM, charset_text="alphanumerics and +=,.@_-"),
    tokens.AWS_IAM_USER: NameRule(
        "name", 64, "TF iam/user.go (charset); AWS IAM CreateUser UserName (64)",
        charset=r"[0-9A-Za-z=,.@\-_+]+", charset_text="alphanumerics and =,.@-_+"),
    tokens.AWS_IAM_USER_POLICY: NameRule(
        "name", 128, "AWS IAM PutUserPolicy PolicyName (TF iam/user_policy.go does not validate)",
        charset=_IAM, charset_text="alphanumerics and +=,.@_-"),
    tokens.AWS_EC2_LAUNCH_TEMPLATE: NameRule(
        "name", 125, "TF internal/verify/validate.go ValidLaunchTemplateName",
        min_len=3, charset=r"[0-9A-Za-z()./_\-]+", charset_text="alphanumerics and ()./_-"),
    tokens.AWS_EC2_SECURITY_GROUP: NameRule(
        "name", 255, "TF ec2/vpc_security_group.go (length, sg-); AWS CreateSecurityGroup GroupName (charset)",
        charset=r"[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]+",
        charset_text="alphanumerics, spaces and ._-:/()#,@[]+=&;{}!$*", prefixes=("sg-",)),
    tokens.AWS_EC2_PLACEMENT_GROUP: NameRule(
        "name", 255, "AWS CreatePlacementGroup GroupName (up to 255 ASCII characters); TF "
        "ec2/ec2_placement_group.go (Required: autonamed with the default 255)",
        charset=r"[\x20-\x7e]+", charset_text="printable ASCII characters"),
    tokens.AWS_AUTOSCALING_GROUP: NameRule(
        "name", 255, "TF autoscaling/group.go StringLenBetween(0, 255); AWS CreateAutoScalingGroup (1-255)"),
    tokens.AWS_SECRETSMANAGER_SECRET: NameRule(
        "name", 512, "TF secretsmanager/validate.go validSecretName",
        charset=r"[0-9A-Za-z/_+=.@-]+", charset_text="alphanumerics and /_+=.@-"),
    tokens.AWS_S3_BUCKET: NameRule(
        "bucket", 63, "PA resource_overrides.go AutoName(63, ToLower); TF s3/bucket.go validBucketName; "
        "AWS S3 general purpose bucket naming rules",
        autoname_max=63, min_len=3, charset=r"[0-9a-z.-]+", charset_text="lowercase alphanumerics, hyphens and periods",
        prefixes=("xn--", "sthree-", "amzn-s3-demo-"),
        suffixes=("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"),
        lower_autoname=True, checks=(_not_ip, _s3_shape)),
    tokens.AWS_KMS_ALIAS: NameRule(
        "name", 256, "TF kms/validate.go validNameForResource; PA resource_overrides.go AutoName(238) + alias/",
        autoname_max=238, charset=r"alias/[0-9A-Za-z_/-]+",
        charset_text="'alias/' followed by alphanumerics and _/-", prefixes=("alias/aws/",), autoname_prefix="alias/"),
    tokens.AWS_SSM_DOCUMENT: NameRule(
        "name", 128, "AWS SSM API reference CreateDocument Name; TF ssm/document.go (Required: autonamed 255)",
        min_len=3, charset=r"[a-zA-Z0-9_\-.]+", charset_text="alphanumerics and _-.",
        iprefixes=("aws", "amazon", "amzn")),
    **{token: NameRule(
        "name", 128, "AWS Image Builder API reference (CreateComponent, CreateImageRecipe, "
        "CreateInfrastructureConfiguration, CreateDistributionConfiguration, CreateImagePipeline, "
        "CreateLifecyclePolicy): name "
        "pattern ^[-_A-Za-z-0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z-0-9]$ (PA: autonamed with the default 255)",
        min_len=3, charset=r"[-_A-Za-z0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z0-9]",
        charset_text="alphanumerics, hyphens, underscores and inner spaces")
       for token in (tokens.AWS_IMAGEBUILDER_COMPONENT, tokens.AWS_IMAGEBUILDER_IMAGE_RECIPE,
                     tokens.AWS_IMAGEBUILDER_INFRASTRUCTURE_CONFIGURATION,
                     tokens.AWS_IMAGEBUILDER_DISTRIBUTION_CONFIGURATION,
                     tokens.AWS_IMAGEBUILDER_IMAGE_PIPELINE, tokens.AWS_IMAGEBUILDER_LIFECYCLE_POLICY)},
}


def autoname_base(token: str, logical: str) -> str:
    """What the 7 random chars are appended to (BR ComputeAutoNameDefault: Transform(urn name))."""
    return logical.lower() if NAME_RULES[token].lower_autoname else logical


def physical_name(token: str, logical: str, explicit: str | None) -> str:
    """The name AWS gets: the explicit one, else the worst-case shape of pulumi-aws's autoname."""
    if explicit is not None:
        return explicit
    rule = NAME_RULES[token]
    name = autoname_base(token, logical) + AUTONAME_SUFFIX
    if rule.autoname_prefix and not name.startswith(rule.autoname_prefix):
        name = rule.autoname_prefix + name
    return name


def explicit_name(token: str, stem: str, suffix: str) -> str:
    """An explicit name `<stem><suffix>` for `token`, hashed only when AWS's limit needs it (ADR 0042)."""
    return fit(stem, suffix, NAME_RULES[token].max_len)


def logical_name(token: str, stem: str, suffix: str) -> str:
    """A logical name `<stem><suffix>` whose pulumi-aws auto-name fits `token`'s rules, hashed only
    when needed (ADR 0042): the autoname adds 8 characters (and a KMS alias `alias/`)."""
    rule = NAME_RULES[token]
    room = min(rule.max_len - len(rule.autoname_prefix), rule.autoname_max) - len(AUTONAME_SUFFIX)
    return fit(stem, suffix, room)


def name_problems(token: str, logical: str, explicit: str | None) -> list[str]:
    """Every reason pulumi-aws or AWS would refuse this resource's name (empty = fine)."""
    rule = NAME_RULES[token]
    if explicit is None:
        base = autoname_base(token, logical)
        if len(base) + len(AUTONAME_SUFFIX) > rule.autoname_max:
            # BR info/autonaming.go: no truncation, Check fails.
            return [f"could not make instance of '{token}': name '{base}-' plus 7 random chars is longer than "
                    f"maximum length {rule.autoname_max}"]
    name = physical_name(token, logical, explicit)
    p = f'"{rule.prop}"'
    out: list[str] = []
    if len(name) > rule.max_len:
        out.append(f'{p} cannot be longer than {rule.max_len} characters: "{name}" ({len(name)})')
    if len(name) < rule.min_len:
        out.append(f'{p} cannot be shorter than {rule.min_len} characters: "{name}"')
    if rule.charset and name and not re.fullmatch(rule.charset, name):
        out.append(f'only {rule.charset_text} allowed in {p}: "{name}"')
    if rule.no_edge_hyphen and name.startswith("-"):
        out.append(f'{p} cannot begin with a hyphen: "{name}"')
    if rule.no_edge_hyphen and name.endswith("-"):
        out.append(f'{p} cannot end with a hyphen: "{name}"')
    out += [f'{p} cannot begin with "{x}": "{name}"' for x in rule.prefixes if name.startswith(x)]
    out += [f'{p} cannot begin with "{x}" (any case): "{name}"' for x in rule.iprefixes
            if name.lower().startswith(x)]
    out += [f'{p} cannot end with "{x}": "{name}"' for x in rule.suffixes if name.endswith(x)]
    out += [f'{p} {reason}: "{name}"' for check in rule.checks if (reason := check(name))]
    return out


# Tags. Default tags reach IAM, S3, KMS and Secrets Manager too, so the strictest common charset
# applies (AWS tagging restrictions; IAM Tag pattern ^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$).
MAX_TAGS = 50
MAX_KEY = 128
MAX_VALUE = 256
RESERVED_TAG_PREFIX = "aws:"
TAG_CHARS = re.compile(r"[\w\s.:/=+\-@]*")
TAG_CHARS_TEXT = "letters, digits, spaces and _ . : / = + - @"


def tag_problems(tags: Mapping[str, str]) -> list[str]:
    """Problems of one resource's complete (merged) tag set, as AWS would refuse it at `up`."""
    out: list[str] = []
    user = [k for k in tags if not k.lower().startswith(RESERVED_TAG_PREFIX)]
    if len(user) > MAX_TAGS:
        out.append(f"{len(user)} tags on one resource; AWS allows at most {MAX_TAGS}")
    for key, value in tags.items():
        if not 1 <= len(key) <= MAX_KEY:
            out.append(f"tag key '{key[:40]}' must be 1-{MAX_KEY} characters, is {len(key)}")
        if len(value) > MAX_VALUE:
            out.append(f"tag '{key}' value must be at most {MAX_VALUE} characters, is {len(value)}")
        if key.lower().startswith(RESERVED_TAG_PREFIX):
            out.append(f"tag key '{key}': the prefix 'aws:' is reserved for AWS (any case)")
        if value.lower().startswith(RESERVED_TAG_PREFIX):
            out.append(f"tag '{key}' value '{value[:40]}': the prefix 'aws:' is reserved for AWS (any case)")
        for what, text in (("key", key), ("value", value)):
            if not TAG_CHARS.fullmatch(text):
                out.append(f"tag {what} '{text[:40]}' may contain only {TAG_CHARS_TEXT}")
    return out
