"""Backstop: components/aws/naming.py's rules applied to what the program actually registered.

The settings rule checks the names the inventory predicts; this catches a resource the inventory
misses (a new component, a renamed child) before the offline plan calls the stack fine.
"""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import Any

from ..aws.naming import NAME_RULES, name_problems, tag_problems
from ..tables import tokens
from .mockengine import Recorded

Problem = tuple[str, str]
AWS_PROVIDER = tokens.PROVIDER_AWS


@cache
def has_name_input(token: str) -> bool:
    """Whether the SDK's Args class has a `name` input, i.e. pulumi-aws auto-names the type."""
    parts = token.split(":")
    module, cls = parts[1].split("/")[0], parts[-1]
    for mod in (module, f"{module}_"):  # `lambda` is pulumi_aws.lambda_
        try:
            with warnings.catch_warnings():  # deprecated siblings (s3.BucketV2) warn on import
                warnings.simplefilter("ignore", DeprecationWarning)
                args = getattr(importlib.import_module(f"pulumi_aws.{mod}"), f"{cls}Args", None)
        except ImportError:
            continue
        return isinstance(getattr(args, "name", None), property)
    return False


def _known(value: Any) -> str | None:
    """A plain name; None when the plan cannot know it (computed or secret)."""
    return value if isinstance(value, str) and value not in ("<computed>", "[secret]") else None


def _plain(tags: Mapping[str, Any]) -> dict[str, str]:
    """Known tag values only: a computed or secret value cannot be judged offline."""
    return {k: v for k, v in tags.items() if _known(v) is not None}


def _tag_sets(r: Recorded, defaults: Mapping[str, str]) -> Iterator[tuple[str, Mapping[str, str]]]:
    tags = r.inputs.get("tags")
    if isinstance(tags, dict):  # provider default tags merge in; resource tags win a collision
        yield "tags", _plain({**defaults, **tags})
    elif isinstance(tags, list):  # Auto Scaling group tag blocks: default tags never reach them
        yield "tags", _plain({t["key"]: t.get("value") for t in tags if isinstance(t, dict) and "key" in t})
    for i, spec in enumerate(r.inputs.get("tagSpecifications") or []):
        if isinstance(spec, dict) and isinstance(spec.get("tags"), dict):
            yield f"tagSpecifications[{i}]", _plain(spec["tags"])  # launched resources: no default tags


def _provider_defaults(resources: Iterable[Recorded]) -> dict[str, dict[str, str]]:
    """Each AWS provider's default tags, keyed by the provider id the mock engine gave it
    (`<name>-<hash>`, components/cli/mockengine.py PlanMocks.new_resource)."""
    out: dict[str, dict[str, str]] = {}
    for p in resources:
        if p.type == AWS_PROVIDER:
            raw = p.inputs.get("defaultTags")
            tags = (json.loads(raw) if isinstance(raw, str) else raw or {}).get("tags") or {}
            out[p.name] = tags
    return out


def recorded_problems(resources: list[Recorded]) -> list[Problem]:
    """Name and tag problems of every recorded AWS resource, path `resource <token> '<logical>'`."""
    defaults = _provider_defaults(resources)
    problems: list[Problem] = []
    for r in resources:
        if not r.type.startswith("aws:"):
            continue
        where = f"resource {r.type} '{r.name}'"
        rule = NAME_RULES.get(r.type)
        if rule is not None:
            explicit = r.inputs.get(rule.prop)
            if explicit is None or _known(explicit) is not None:  # unknown explicit names: nothing to check
                problems += [(where, p) for p in name_problems(r.type, r.name, explicit)]
        elif has_name_input(r.type):
            problems.append((where, "auto-named by pulumi-aws, but components/aws/naming.py has no NAME_RULES "
                                    "entry for this type: add its name rules there"))
        provider_defaults = defaults.get(r.provider.rsplit("-", 1)[0], {})
        for what, tags in _tag_sets(r, provider_defaults):
            problems += [(where, f"{what}: {p}") for p in tag_problems(tags)]
    return problems
