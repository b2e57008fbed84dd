"""Per-region overrides file: `stacks/<template>.regions.yaml` (reviewable next to the template).

    regions:
      us-west-2:                 # a fragment of ck8s-gpu:settings, camelCase, merged over the template
        network: {vpcCidr: 10.41.0.0/16}
        backup: {region: us-east-2}
      ap-northeast-1:
        nodePools: [{name: l40s, instanceType: g6e.24xlarge}]

The file is optional; a region it does not name gets the template as is (plus derived fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..settings.load import SettingsError, parse_stack_text
from ..settings.rules.cluster import REGION

Overrides = dict[str, dict[str, Any]]


def overrides_file(template: str, stacks_dir: Path) -> Path:
    return stacks_dir / f"{template}.regions.yaml"


def parse_overrides(doc: Any, source: str) -> Overrides:
    """Validate the document's shape; every problem at once (settings are validated after merging)."""
    if doc is None:
        return {}
    problems: list[tuple[str, str]] = []
    if not isinstance(doc, Mapping):
        raise SettingsError(source, [("file", "must be a mapping with a `regions:` key")])
    for key in doc:
        if key != "regions":
            problems.append((str(key), "unknown key; the file holds only `regions:`"))
    regions = doc.get("regions") or {}
    if not isinstance(regions, Mapping):
        raise SettingsError(source, [*problems, ("regions", "must map region names to settings fragments")])
    out: Overrides = {}
    for region, fragment in regions.items():
        path = f"regions.{region}"
        if not isinstance(region, str) or not REGION.match(region):
            problems.append((path, f"'{region}' is not an AWS region name (like eu-west-1)"))
            continue
        if fragment is None:
            fragment = {}
        if not isinstance(fragment, Mapping):
            problems.append((path, "must be a mapping (a fragment of ck8s-gpu:settings)"))
            continue
        if "region" in fragment:
            problems.append((f"{path}.region", "set by stamping from the region key; remove it"))
        out[region] = dict(fragment)
    if problems:
        raise SettingsError(source, problems)
    return out


def load_overrides(path: Path | None) -> Overrides:
    """Overrides from `path`; {} when `path` is None or the file does not exist."""
    if path is None or not path.exists():
        return {}
    # Not UTF-8, not YAML, too deep or an alias bomb: one clean error (components/settings/load.py).
    return parse_overrides(parse_stack_text(path.read_bytes(), str(path)), str(path))
