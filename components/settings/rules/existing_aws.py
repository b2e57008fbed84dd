"""Settings rules: `existingAws`, an existing cluster whose nodes are EC2 instances, where the
autoscaler launches autoscaled pools' nodes (docs/autoscaling.md, "On an existing cluster"; ADR 0049).

Its node class fields are given verbatim to each autoscaled pool's EC2NodeClass, so what the CRD
would refuse is refused here, at its path, every problem in one message: github.com/aws/
karpenter-provider-aws v1.15.0 pkg/apis/v1/ec2nodeclass.go (and pkg/apis/crds/
karpenter.k8s.aws_ec2nodeclasses.yaml, generated from it). A term here names exactly one selector
(the CRD refuses `id` beside anything else; `tags` beside `ssmParameter` selects nothing the user
meant either), which is stricter than the CRD where it only refuses a list whose every term has both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..model import AmiSelectorTerm, Ec2SelectorTerm, ExistingAwsSettings, Settings
from ..problems import ROOT, Problem, cut, path_key
from ..secrets import credential_problem
from .pools import AMI_ID, SSM_PATH, SSM_PATH_MAX

HERE = f"{ROOT}.existingAws"
# ec2nodeclass.go: every selector list has MaxItems 30, every term's tags MaxProperties 20; the id
# patterns (`subnet-[0-9a-z]+`, `sg-[0-9a-z]+`; amiSelectorTerms' is AMI_ID, EC2's own widths).
MAX_TERMS = 30
MAX_TERM_TAGS = 20
SUBNET_ID = re.compile(r"^subnet-[0-9a-z]+$")
SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-z]+$")
# IAM: instance profile names `[\w+=,.@-]+` up to 128; a role ARN (IAM User Guide, "IAM identifiers").
INSTANCE_PROFILE = re.compile(r"^[\w+=,.@-]{1,128}$")
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$")
# EC2: user data is at most 16 KB before base64 (EC2 User Guide, "Run commands at launch").
USER_DATA_MAX = 16 * 1024
# ec2nodeclass.go spec.tags: the keys the CRD refuses (Karpenter writes them itself).
KARPENTER_TAG_KEYS = ("eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                      "karpenter.k8s.aws/ec2nodeclass")
KARPENTER_TAG_PREFIX = "kubernetes.io/cluster"

Judge = Callable[[str, Any], Iterator[Problem]]  # one selector term at its path


def _existing_aws(s: Settings) -> Iterator[Problem]:
    e = s.existing_aws
    if e is None:
        return
    if s.platform != "existing":
        why = ("the aws platform makes its nodes and renders their node classes itself"
               if s.platform == "aws" else f"the {s.platform} platform launches no EC2 instances")
        yield HERE, f"only for platform existing (a cluster you made, whose nodes are EC2 instances): {why}"
        return
    if not any(p.autoscaling is not None for p in s.node_pools):
        yield HERE, "no node pool is autoscaled (nodePools[].autoscaling): nothing would read it"
    if s.region is None:
        yield (f"{ROOT}.region", "required with existingAws: Karpenter calls EC2 in the region of your nodes, "
               "and the controller's IAM policy is scoped to it")
    yield from _fields(e)


def _fields(e: ExistingAwsSettings) -> Iterator[Problem]:
    url = urlsplit(e.cluster_endpoint)
    if url.scheme != "https" or not url.hostname or any(c.isspace() for c in e.cluster_endpoint):
        # Karpenter's options_validation.go validateEndpoint wants an absolute URL with a host; the
        # API server of a Canonical Kubernetes cluster serves TLS only.
        yield (f"{HERE}.clusterEndpoint",
               f"'{cut(e.cluster_endpoint)}' is not an https URL with a host (your API server, as nodes reach it)")
    if not ROLE_ARN.match(e.node_role_arn):
        yield (f"{HERE}.nodeRoleArn",
               f"'{cut(e.node_role_arn)}' is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
    if not INSTANCE_PROFILE.match(e.instance_profile):
        yield (f"{HERE}.instanceProfile",
               f"'{cut(e.instance_profile)}' is not an instance profile name (1-128 of A-Za-z0-9_+=,.@-)")
    yield from _terms(f"{HERE}.amiSelectorTerms", e.ami_selector_terms, _ami_term)
    yield from _terms(f"{HERE}.subnetSelectorTerms", e.subnet_selector_terms, _id_term(SUBNET_ID, "subnet-"))
    yield from _terms(f"{HERE}.securityGroupSelectorTerms", e.security_group_selector_terms,
                      _id_term(SECURITY_GROUP_ID, "sg-"))
    if not e.user_data.strip():
        yield f"{HERE}.userData", "empty: a launched instance would never join your cluster"
    elif len(e.user_data.encode()) > USER_DATA_MAX:
        yield f"{HERE}.userData", f"{len(e.user_data.encode())} bytes; EC2 takes at most {USER_DATA_MAX}"
    if why := credential_problem(e.user_data):
        # The one recogniser (components/settings/credentials.py), as the policy pack judges
        # launch templates' user-data (components/policies/secrets.py).
        yield (f"{HERE}.userData", f"{why}: EC2 shows user-data in plain text (its API and the instance "
               "metadata service), and anyone who may read EC2NodeClasses reads it; fetch it at boot with the "
               "node's instance role instead (Secrets Manager, SSM SecureString)")
    for key in e.tags:
        if key == "" or key in KARPENTER_TAG_KEYS or key.startswith(KARPENTER_TAG_PREFIX):
            yield (f"{HERE}.tags{path_key(key)}", f"'{cut(key)}' is a key Karpenter writes itself (the "
                   "EC2NodeClass CRD refuses it)" if key else "an empty tag key (the EC2NodeClass CRD refuses it)")


def _terms(path: str, terms: Sequence[Any], judge: Judge) -> Iterator[Problem]:
    if not terms:
        yield path, "cannot be empty: Karpenter would select nothing (the EC2NodeClass CRD refuses it)"
    elif len(terms) > MAX_TERMS:
        yield path, f"{len(terms)} terms; the EC2NodeClass CRD takes at most {MAX_TERMS}"
    for i, term in enumerate(terms):
        yield from judge(f"{path}[{i}]", term)


def _one_selector(where: str, term: AmiSelectorTerm | Ec2SelectorTerm, names: Sequence[str]) -> Iterator[Problem]:
    given = [n for n in names if getattr(term, _attr(n)) is not None]
    if not given:
        yield where, f"selects nothing: set one of {', '.join(names)}"
    elif len(given) > 1:
        yield where, f"{' and '.join(given)} are mutually exclusive: a term selects by one of them"
    if term.tags is not None:
        yield from _tags(f"{where}.tags", term.tags)


def _attr(name: str) -> str:
    return "ssm_parameter" if name == "ssmParameter" else name


def _tags(where: str, tags: dict[str, str]) -> Iterator[Problem]:
    if not tags:
        yield where, "names no tag: give at least one (the value `*` matches any value)"
    elif len(tags) > MAX_TERM_TAGS:
        yield where, f"{len(tags)} tags; the EC2NodeClass CRD takes at most {MAX_TERM_TAGS} in a term"
    for key, value in tags.items():
        if key == "" or value == "":
            yield f"{where}{path_key(key)}", "empty tag keys or values aren't supported (the EC2NodeClass CRD)"


def _ami_term(where: str, term: AmiSelectorTerm) -> Iterator[Problem]:
    yield from _one_selector(where, term, ("id", "ssmParameter", "tags"))
    if term.id is not None and not AMI_ID.match(term.id):
        yield f"{where}.id", f"'{cut(term.id)}' is not an AMI id (ami- and 8 or 17 lowercase hex characters)"
    p = term.ssm_parameter
    if p is not None and (not SSM_PATH.match(p) or len(p) > SSM_PATH_MAX):
        yield (f"{where}.ssmParameter", f"'{cut(p)}' is not an SSM parameter path (/a/b/c: a-zA-Z0-9_.- between "
               "slashes, at most 15 levels)")


def _id_term(pattern: re.Pattern[str], prefix: str) -> Judge:
    def judge(where: str, term: Ec2SelectorTerm) -> Iterator[Problem]:
        yield from _one_selector(where, term, ("id", "tags"))
        if term.id is not None and not pattern.match(term.id):
            yield f"{where}.id", f"'{cut(term.id)}' is not an id of the form {prefix}<lowercase hex>"
    return judge
