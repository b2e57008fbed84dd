"""Track changes and version mixes, against the Kubernetes version-skew policy."""

from __future__ import annotations

import pytest

from components.upgrade import skew


@pytest.mark.parametrize(("deployed", "requested"), [
    ("1.34-classic", "1.34-classic"), ("1.34-classic", "1.35-classic"), ("1.35-classic", "1.36-classic"),
])
def test_same_or_next_minor_is_allowed(deployed: str, requested: str) -> None:
    assert skew.track_change_problems(deployed, requested) == []


def test_a_skipped_minor_is_refused_with_the_path_and_the_next_command() -> None:
    [problem] = skew.track_change_problems("1.34-classic", "1.36-classic")
    assert "skips 1 minor" in problem
    assert "1.34-classic -> 1.35-classic -> 1.36-classic" in problem
    assert "ck8s-gpu upgrade --to 1.35-classic" in problem


def test_two_skipped_minors_are_counted() -> None:
    [problem] = skew.track_change_problems("1.33-classic", "1.36-classic")
    assert "skips 2 minor(s)" in problem


def test_a_downgrade_is_refused() -> None:
    [problem] = skew.track_change_problems("1.35-classic", "1.34-classic")
    assert "downgrade" in problem


def test_unknown_tracks_are_left_to_the_track_rule() -> None:
    assert skew.track_change_problems("1.34-classic", "9.99-classic") == []


def test_a_kubelet_never_newer_than_the_oldest_apiserver() -> None:
    assert skew.kubelet_problems(35, [35, 35, 34])[0].startswith("kubelet 1.35 would be newer than kube-apiserver 1.34")
    assert skew.kubelet_problems(35, [35, 35, 35]) == []
    assert skew.kubelet_problems(34, [35]) == []


def test_a_kubelet_at_most_three_minors_behind() -> None:
    assert skew.kubelet_problems(32, [35]) == []
    assert "more than 3 minors" in skew.kubelet_problems(31, [35])[0]


def test_apiservers_at_most_one_minor_apart() -> None:
    assert skew.apiserver_problems([34, 35, 35]) == []
    assert skew.apiserver_problems([34, 36]) != []


def test_deployed_track_reads_the_oldest_upgrade_resource() -> None:
    resources = [
        {"type": skew.UPGRADE_TYPES[0], "inputs": {"track": "1.35-classic"}},
        {"type": skew.UPGRADE_TYPES[1], "inputs": {"track": "1.34-classic"}},
        {"type": "aws:ec2/instance:Instance", "inputs": {"track": "1.32-classic"}},
    ]
    assert skew.deployed_track(resources) == "1.34-classic"
    assert skew.deployed_track([]) is None
