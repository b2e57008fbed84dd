"""Track, snap revisions and node images move together (issue 46): a stack that changes its track
but keeps the old track's snap revisions or control-plane image line is refused at each field, with
what to rebuild (components/settings/rules/cluster.py `snap_revision_problem`, `image_track`); an
image line whose parameter names another track than the snap it carries is refused too
(components/images/settings.py). Revisions: components/tables/pins.py KNOWN_SNAP_REVISIONS
(`snapcraft status k8s`, 2026-06-05: v1.34.4 is 5325 on amd64, 5328 on arm64)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.images.settings import parse_image_settings
from components.plan.run import stack_file
from components.settings.load import SETTINGS_KEY, read_stack_file
from components.validate import parse
from tests.unit.helpers import raised_problems, settings_problems

SNAP = "settings.kubernetes.snap"


def prod(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(read_stack_file(stack_file("aws-prod"))[SETTINGS_KEY])
    for key, value in changes.items():
        raw["kubernetes"][key] = value
    return raw


def test_the_upgrade_runbooks_half_done_move_is_refused_naming_every_field_to_move() -> None:
    # track and version moved to 1.35, revisions and the control-plane image line left at 1.34's
    raw = prod(track="1.35-classic", snap={"version": "v1.35.7", "revisions": {"amd64": 5325, "arm64": 5328},
                                           "fromImage": True})
    problems = settings_problems(raw)
    assert problems[f"{SNAP}.revisions.amd64"].startswith("5325 is the amd64 revision of k8s v1.34.4, not v1.35.7's")
    assert problems[f"{SNAP}.revisions.arm64"].startswith("5328 is the arm64 revision of k8s v1.34.4")
    assert "built for track 1.34-classic" in problems["settings.controlPlane.ami"]
    assert "build that track's images" in problems["settings.controlPlane.ami"]


@pytest.mark.parametrize(("revisions", "bad"), [
    ({"amd64": 5328, "arm64": 5328}, "amd64"),  # arm64's number on amd64
    ({"amd64": 5325, "arm64": 5325}, "arm64"),
    ({"amd64": 5328, "arm64": 5325}, "amd64"),  # swapped: both named
])
def test_a_revision_of_the_other_architecture_is_refused(revisions: dict[str, int], bad: str) -> None:
    problems = settings_problems(prod(snap={"version": "v1.34.4", "revisions": revisions, "fromImage": True}))
    assert f"{SNAP}.revisions.{bad}" in problems
    assert "a revision is one version on one architecture" in problems[f"{SNAP}.revisions.{bad}"]


@pytest.mark.parametrize("ami", [
    "/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.34-classic",
    "/ck8s-gpu/images/airgap/control-plane/ubuntu-24.04/amd64/k8s-1.34-classic",
    "/site/k8s-1.34-classic",
])
def test_an_image_path_of_another_track_is_refused_in_every_spelling(ami: str) -> None:
    raw = prod(track="1.35-classic", snap=None)
    raw["controlPlane"]["ami"] = ami
    raw["nodePools"][0]["ami"] = ami
    raw["images"] = {"preloaded": False}
    problems = settings_problems(raw)
    assert "built for track 1.34-classic" in problems["settings.controlPlane.ami"]
    assert "built for track 1.34-classic" in problems["settings.nodePools[0].ami"]


@pytest.mark.parametrize(("ami", "track"), [
    ("/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.35-classic", "1.35-classic"),  # the same track
    ("/ck8s-gpu/images/gpu-node/ubuntu-24.04/amd64/nvidia-595-server-open", "1.35-classic"),  # names no track
    ("ami-0123456789abcdef0", "1.35-classic"),  # an id names nothing
    ("/site/k8s-images/current", "1.35-classic"),  # k8s- but no track
])
def test_paths_that_agree_or_name_no_track_are_accepted(ami: str, track: str) -> None:
    raw = prod(track=track, snap=None)
    raw["controlPlane"]["ami"] = ami
    assert parse(raw).control_plane.ami == ami


def test_a_version_the_table_does_not_know_is_not_judged() -> None:
    raw = prod(track="1.35-classic", snap={"version": "v1.35.7", "revisions": {"amd64": 6001, "arm64": 6002},
                                           "fromImage": True})
    raw["controlPlane"]["ami"] = "/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.35-classic"
    assert parse(raw).kubernetes.snap is not None


PIN = {"kubernetes": {"track": "1.34-classic", "snap": {"version": "v1.34.4", "revision": 5325}}}


def test_an_image_line_named_for_another_track_is_refused() -> None:
    raw = {"region": "us-east-1", "role": "control-plane", **PIN,
           "parameterName": "/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.35-classic"}
    problems = dict(raised_problems(parse_image_settings, raw, "t"))
    assert "names track 1.35-classic; this line carries 1.34-classic's snap" in problems["image.parameterName"]
    raw["parameterName"] = "/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.34-classic"
    assert parse_image_settings(raw, "t").track == "1.34-classic"
