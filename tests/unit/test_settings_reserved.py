"""Issue 45, "settings": a tag key the project writes itself is refused at its path, not silently
overwritten (components/aws/tags.py default_tags and node_tags write ck8s-gpu/cluster, /role,
/pool, the CCM's kubernetes.io/cluster/<name> and Name over the stack's own); and the region a
rebuild restores from must be one the project knows, like every other region setting."""

from __future__ import annotations

import pytest

from components.aws.tags import default_tags, node_tags
from components.validate import parse
from tests.unit.helpers import settings_problems

BASE = {"platform": "aws", "region": "eu-north-1"}


@pytest.mark.parametrize("key", [
    "ck8s-gpu/cluster", "ck8s-gpu/role", "ck8s-gpu/pool",  # what the project writes
    "ck8s-gpu/anything", "CK8S-GPU/Cluster", " ck8s-gpu/cluster",  # its namespace, in any case
    "kubernetes.io/cluster/ck8s-dev-eu-north-1", "kubernetes.io/cluster/other", "Kubernetes.io/Cluster/x",
    "Name",
])
def test_a_reserved_tag_key_is_refused_at_its_path(key: str) -> None:
    problems = settings_problems({**BASE, "tags": {key: "mine"}})
    assert "is reserved" in problems.get(f"settings.tags.{key}", ""), problems


@pytest.mark.parametrize("key", ["team", "name", "Project", "ck8s-gpu-team", "kubernetes.io/role", "app/ck8s-gpu/x",
                                 "cost-center", "Name2"])
def test_look_alikes_are_kept(key: str) -> None:
    s = parse({**BASE, "tags": {key: "mine"}})
    assert default_tags(s)[key] == "mine"
    assert node_tags(s, "worker", "n", pool="gpu")[key] == "mine"


def test_today_the_overwritten_keys_are_exactly_the_reserved_ones() -> None:
    """The rule's table is the tag writers' keys: every key node_tags writes over a stack tag is reserved."""
    from components.settings.rules.cluster import reserved_tag

    s = parse(BASE)
    written = set(node_tags(s, "worker", "n", pool="gpu")) | set(default_tags(s))
    assert written and all(reserved_tag(k) for k in written), written


@pytest.mark.parametrize(("region", "ok"), [("eu-north-1", True), ("us-gov-west-1", True), ("eu-wast-1", False),
                                            ("xx-north-9", False), ("us-east-7", False)])
def test_the_restore_region_is_a_known_region(region: str, ok: bool) -> None:
    raw = {**BASE, "backup": {"region": "eu-central-1", "restoreFrom": {"clusterName": "ck8s-old", "region": region}}}
    if ok:
        assert parse(raw).backup.restore_from.region == region  # type: ignore[union-attr]
    else:
        assert "is no AWS region" in settings_problems(raw).get("settings.backup.restoreFrom.region", "")
