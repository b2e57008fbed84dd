"""Settings of the boot media and the image supply (issue 29, docs/adr/0043): what an offline
stack must hold, what a pull-through cache needs, and where the settings do not apply."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.aws.conftest import settings_for
from tests.unit.helpers import raised_problems


def _problems(stack: str, change: Any) -> list[tuple[str, str]]:
    return raised_problems(settings_for, stack, change)


def test_the_committed_offline_stack_is_accepted() -> None:
    s = settings_for("aws-airgap")
    assert s.offline and s.images.preloaded and s.kubernetes.snap is not None and s.kubernetes.snap.from_image
    assert s.network.nat_gateways == "none"


@pytest.mark.parametrize(("change", "path", "says"), [
    (lambda r: r["network"].update(natGateways="single"), "settings.network.natGateways", "no route to the internet"),
    (lambda r: r["kubernetes"]["snap"].update(fromImage=False), "settings.kubernetes.snap",
     "cannot reach the Snap Store"),
    (lambda r: r["images"].update(preloaded=False), "settings.images.preloaded", "must be true offline"),
    (lambda r: r["images"].pop("mirror") and r["images"].update(pullThroughCache="off", credentials={}),
     "settings.images.mirror", "required offline"),
    (lambda r: r["gpuStack"].update(driver="operator", toolkit="operator"), "settings.gpuStack.driver",
     "fetches packages"),
    (lambda r: r.update(backup={"region": "eu-central-1"}), "settings.backup", "cannot reach"),
    (lambda r: r["nodePools"][0].update(ami="/team/images/gpu"), "settings.nodePools[0].ami",
     "not an image of the image program"),
    (lambda r: r["controlPlane"].update(ami="/team/images/cp"), "settings.controlPlane.ami",
     "not an image of the image program"),
])
def test_an_offline_stack_that_would_reach_the_internet_is_refused(change: Any, path: str, says: str) -> None:
    problems = _problems("aws-airgap", change)
    assert [p for p, _ in problems] == [path], problems
    assert says in problems[0][1]


@pytest.mark.parametrize(("change", "path", "says"), [
    (lambda r: r["images"].update(mirror="registry.example.com"), "settings.images.mirror", "not an ECR registry host"),
    (lambda r: r["images"].update(mirror="123456789012.dkr.ecr.eu-north-1.amazonaws.com"), "settings.images.mirror",
     "the cache rules are made in us-east-1"),
    (lambda r: r["images"]["credentials"].update(
        {"ghcr.io": "arn:aws:secretsmanager:us-east-1:123456789012:secret:ghcr"}),
     "settings.images.credentials.ghcr.io", "ecr-pullthroughcache/"),
])
def test_a_pull_through_cache_ecr_would_refuse_is_refused(change: Any, path: str, says: str) -> None:
    problems = _problems("aws-airgap", change)
    assert [p for p, _ in problems] == [path], problems
    assert says in problems[0][1]


def test_an_upstream_ecr_cannot_cache_is_not_a_credentials_key() -> None:
    problems = _problems("aws-airgap", lambda r: r["images"]["credentials"].update(
        {"nvcr.io": "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/ngc"}))
    assert [p for p, _ in problems] == ["settings.images.credentials.nvcr.io"]


def test_image_media_need_node_images() -> None:
    problems = _problems("aws-dev", lambda r: r["controlPlane"].pop("ami"))
    assert [p for p, _ in problems] == ["settings.controlPlane.ami"]
    assert "kubernetes.snap.fromImage and images.preloaded" in problems[0][1]


@pytest.mark.parametrize("stack", ["kind", "local"])
def test_the_supply_settings_are_refused_where_they_are_ignored(stack: str) -> None:
    problems = _problems(stack, lambda r: r.update(offline=True, images={"preloaded": True}))
    assert {p for p, _ in problems} == {"settings.offline", "settings.images.preloaded"}


def test_one_mirror_setting_not_two() -> None:
    problems = _problems("aws-airgap", lambda r: r["smokeTest"].update(registry="mirror.internal")
                         if "smokeTest" in r else r.update(smokeTest={"registry": "mirror.internal"}))
    assert [p for p, _ in problems] == ["settings.smokeTest.registry"]
