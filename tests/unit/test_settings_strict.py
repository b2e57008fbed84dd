"""The settings fuzzing classes of issue 27, one table each: sizes bounded by what the platform
holds, no coercion, no duplicate keys, KAI's queue numbers, EC2-only settings where they are
ignored. Each row is refused with its field path (the committed stacks keep passing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.cli.main import main
from components.settings.limits import KIND_MAX_WORKERS
from components.settings.load import parse_stack_text
from components.settings.model import MAX_CLUSTER_NODES
from components.validate import parse
from tests.unit.helpers import cpu_seconds, joined_by_path, raised_problems

AWS = {"platform": "aws", "region": "eu-north-1"}
KIND = {"platform": "kind"}


def _problems(raw: dict[str, Any]) -> dict[str, str]:
    return joined_by_path(raised_problems(parse, raw), " | ")  # every reason at a path, in one string


def _plan_text(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    (tmp_path / "Pulumi.t.yaml").write_text(text)
    code = main(["plan", "--stack", "t", "--stacks-dir", str(tmp_path), "--quiet"])
    captured = capsys.readouterr()
    return code, captured.err + captured.out


# --- (a) sizes ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "path", "fragment"), [
    ({**KIND, "nodePools": [{"name": "g", "minSize": 1, "desiredSize": 10**9, "maxSize": 10**9}]},
     "settings.nodePools[0].desiredSize", f"less than or equal to {MAX_CLUSTER_NODES}"),
    ({**AWS, "nodePools": [{"name": "g", "maxSize": 10**12}]}, "settings.nodePools[0].maxSize",
     f"less than or equal to {MAX_CLUSTER_NODES}"),
    ({**KIND, "nodePools": [{"name": "g", "desiredSize": KIND_MAX_WORKERS + 1, "maxSize": 100}]},
     "settings.nodePools[0].desiredSize", f"at most {KIND_MAX_WORKERS}"),
    ({**KIND, "kind": {"mirrorPool": "b"}, "nodePools": [{"name": "a"}, {"name": "b", "desiredSize": 50,
                                                                          "maxSize": 50}]},
     "settings.nodePools[1].desiredSize", "kind runs each node as a container"),
    ({**AWS, "nodePools": [{"name": "a", "maxSize": 3000}, {"name": "b", "maxSize": 2500}]},
     "settings.nodePools", f"Kubernetes supports at most {MAX_CLUSTER_NODES} nodes"),
])
def test_a_size_beyond_what_the_platform_holds_is_refused_fast(raw: dict[str, Any], path: str, fragment: str) -> None:
    found: dict[str, str] = {}
    assert cpu_seconds(lambda: found.update(_problems(raw))) < 10  # was: memory exhausted, a traceback after 40 s
    assert fragment in found[path], found


def test_sizes_within_the_bounds_are_accepted() -> None:
    assert parse({**KIND, "nodePools": [{"name": "g", "desiredSize": KIND_MAX_WORKERS,
                                         "maxSize": KIND_MAX_WORKERS}]}).node_pools[0].desired_size == 8
    # kind builds only the mirrored pool: another pool may keep its aws size.
    assert parse({**KIND, "nodePools": [{"name": "a"}, {"name": "b", "maxSize": 500}]}).node_pools[1].max_size == 500
    assert parse({**AWS, "nodePools": [{"name": "a", "maxSize": 2000}, {"name": "b", "maxSize": 2000}]})


# --- (b) strict types --------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "path", "given"), [
    ({**KIND, "smokeTest": {"gpus": True}}, "settings.smokeTest.gpus", "a boolean"),
    ({**KIND, "controlPlane": {"count": True}}, "settings.controlPlane.count", "a boolean"),
    ({**KIND, "nodePools": [{"name": "g", "desiredSize": True}]}, "settings.nodePools[0].desiredSize", "a boolean"),
    ({**KIND, "queues": [{"name": "q", "priority": False}]}, "settings.queues[0].priority", "a boolean"),
    ({**KIND, "kubernetes": {"upgrade": {"maxUnavailable": "2"}}}, "settings.kubernetes.upgrade.maxUnavailable",
     "text"),
    ({**KIND, "smokeTest": {"gpus": 1.5}}, "settings.smokeTest.gpus", "a number"),
    ({**KIND, "kubernetes": {"holdSnapRefresh": "yes"}}, "settings.kubernetes.holdSnapRefresh", "text"),
    ({**KIND, "kubernetes": {"holdSnapRefresh": 1}}, "settings.kubernetes.holdSnapRefresh", "a number"),
    ({**KIND, "environment": 7}, "settings.environment", "a number"),
    ({**KIND, "tags": {"team": 5}}, "settings.tags.team", "a number"),
])
def test_no_value_is_coerced_into_another_type(raw: dict[str, Any], path: str, given: str) -> None:
    found = _problems(raw)
    assert f"got {given}" in found[path] and "not converted" in found[path], found


def test_an_integral_float_is_the_integer_the_engine_hands_over() -> None:
    """Go's encoding/json writes 2.0 as 2, so under `pulumi up` the program reads 2: so does plan."""
    assert parse({**KIND, "smokeTest": {"gpus": 1.0}}).smoke_test.gpus == 1
    assert parse({**KIND, "queues": [{"name": "gpu-root"}, {"name": "default", "parent": "gpu-root"},
                                     {"name": "smoke-test", "parent": "gpu-root", "gpu": {"quota": 2}}]})


@pytest.mark.parametrize(("scalar", "read_as"), [
    ("yes", "yes"), ("No", "No"), ("on", "on"), ("OFF", "OFF"), ("y", "y"),  # YAML 1.1 booleans stay text
    ("true", True), ("False", False), ("1:30", "1:30"), ("2.0", 2.0), ("0x1f", 31), ("-7", -7), ("~", None),
])
def test_plain_scalars_read_as_yaml_1_2(scalar: str, read_as: object) -> None:
    assert parse_stack_text(f"v: {scalar}\n".encode(), "t") == {"v": read_as}


def test_a_yaml_1_1_boolean_for_a_switch_is_refused_from_a_stack_file(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _plan_text(tmp_path, "config:\n  ck8s-gpu:settings:\n    platform: kind\n"
                                     "    kubernetes: {holdSnapRefresh: yes}\n", capsys)
    assert code == 2 and "  settings.kubernetes.holdSnapRefresh: Input should be a valid boolean, got text" in out


# --- (c) duplicate keys ------------------------------------------------------------------------

HEAD = "config:\n  ck8s-gpu:settings:\n    platform: kind\n"


@pytest.mark.parametrize(("body", "path", "lines"), [
    (HEAD + "    environment: a\n    environment: b\n", "settings.environment", "lines 4 and 5"),
    (HEAD + "    platform: aws\n", "settings.platform", "lines 3 and 4"),
    (HEAD + "    nodePools:\n      - name: g\n        desiredSize: 1\n        desiredSize: 2\n",
     "settings.nodePools[0].desiredSize", "lines 6 and 7"),
    (HEAD + "    gpuStack:\n      addons:\n        kaiScheduler:\n          values: {a: 1, a: 2}\n",
     "settings.gpuStack.addons.kaiScheduler.values.a", "lines 7 and 7"),
    (HEAD + "  ck8s-gpu:settings:\n    platform: aws\n", "settings", "lines 2 and 4"),
    (HEAD + "  aws:region: eu-north-1\n  aws:region: us-east-1\n", "config.aws:region", "lines 4 and 5"),
    (HEAD + "config: {}\n", "file", "lines 1 and 4"),
])
def test_a_key_given_twice_is_refused_naming_the_path_and_both_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, path: str, lines: str) -> None:
    code, out = _plan_text(tmp_path, body, capsys)
    assert code == 2, out
    assert f"  {path}: key '" in out and f"is given twice ({lines})" in out, out
    assert "Traceback" not in out


def test_every_duplicate_is_named_and_merges_or_repeats_elsewhere_are_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = (HEAD + "    tags: &t {team: ml}\n    smokeTest: {gpus: 1, gpus: 1}\n    environment: x\n"
            "    environment: y\n    network: {<<: {apiAllowList: []}, natGateways: single}\n")
    code, out = _plan_text(tmp_path, body, capsys)
    assert code == 2
    assert {line.split(":")[0].strip() for line in out.splitlines()[1:] if line.startswith("  ")} == {
        "settings.smokeTest.gpus", "settings.environment"}
    ok = HEAD + "    tags: &t {team: ml}\n    kind: {clusterName: ck8s-gpu}\n    local: {kubeletPools: []}\n"
    assert _plan_text(tmp_path, ok, capsys)[0] == 0  # `name`-like keys in different mappings are fine


# --- (d) queues --------------------------------------------------------------------------------

QUEUES = [{"name": "gpu-root"}, {"name": "default", "parent": "gpu-root"},
          {"name": "smoke-test", "parent": "gpu-root", "priority": 100}]


@pytest.mark.parametrize(("raw", "path", "fragment"), [
    ({**KIND, "queues": [*QUEUES, {"name": "t", "parent": "gpu-root", "priority": -1}]},
     "settings.queues[3].priority", "greater than or equal to 0"),
    ({**KIND, "queues": [*QUEUES, {"name": "t", "parent": "gpu-root", "gpu": {"quota": -0.5}}]},
     "settings.queues[3].gpu.quota", "-1 means unlimited"),
    ({**KIND, "queues": [*QUEUES, {"name": "t", "parent": "gpu-root", "cpu": {"limit": -0.001}}]},
     "settings.queues[3].cpu.limit", "-1 means unlimited"),
    ({**KIND, "queues": [*QUEUES, {"name": "t", "parent": "gpu-root", "gpu": {"quota": 10**6}}]},
     "settings.queues[3].gpu.quota", "any cluster (5000 nodes of 64 GPUs)"),
    # aws: one g6.xlarge pool (1 L4) of at most 4 nodes holds 4 GPUs.
    ({**AWS, "nodePools": [{"name": "g", "maxSize": 4}],
      "queues": [*QUEUES, {"name": "t", "parent": "gpu-root", "gpu": {"limit": 5}}]},
     "settings.queues[3].gpu.limit", "the stack's node pools at their maxSize hold at most 4"),
])
def test_queue_numbers_kai_cannot_mean_are_refused(raw: dict[str, Any], path: str, fragment: str) -> None:
    found = _problems(raw)
    assert fragment in found[path], found


def test_unlimited_zero_and_fitting_quotas_are_accepted() -> None:
    queues = [*QUEUES, {"name": "t", "parent": "gpu-root", "priority": 0, "gpu": {"quota": 0, "limit": -1},
                        "cpu": {"quota": 4000}, "memory": {"quota": -1}}]
    assert parse({**AWS, "nodePools": [{"name": "g", "maxSize": 4}], "queues": queues}).queues[3].priority == 0
    assert parse({**AWS, "nodePools": [{"name": "g", "maxSize": 4}],
                  "queues": [*QUEUES, {"name": "t", "parent": "gpu-root", "gpu": {"limit": 4}}]})


# --- (e) the control plane's EC2 settings ------------------------------------------------------

@pytest.mark.parametrize(("raw", "path", "fragment"), [
    ({**KIND, "controlPlane": {"instanceType": "banana"}}, "settings.controlPlane.instanceType", "ignored on kind"),
    ({**KIND, "controlPlane": {"instanceType": "m7i.xlarge"}}, "settings.controlPlane.instanceType",
     "ignored on kind"),
    ({"platform": "local", "controlPlane": {"rootVolumeGiB": 200}}, "settings.controlPlane.rootVolumeGiB",
     "ignored on local"),
    ({"platform": "existing", "controlPlane": {"apiLoadBalancer": "internal"}},
     "settings.controlPlane.apiLoadBalancer", "ignored on existing"),
    ({**AWS, "controlPlane": {"instanceType": "banana"}}, "settings.controlPlane.instanceType",
     "not an EC2 instance type"),
    ({**AWS, "controlPlane": {"instanceType": "M7I.XLARGE"}}, "settings.controlPlane.instanceType",
     "not an EC2 instance type"),
    ({**AWS, "controlPlane": {"instanceType": "m7i"}}, "settings.controlPlane.instanceType",
     "not an EC2 instance type"),
])
def test_a_control_plane_type_is_an_ec2_type_and_only_where_it_is_used(raw: dict[str, Any], path: str,
                                                                       fragment: str) -> None:
    found = _problems(raw)
    assert fragment in found[path], found


@pytest.mark.parametrize("instance_type", ["m7i.xlarge", "m7g.2xlarge", "c7gn.metal", "m7i.metal-24xl",
                                           "u7i-12tb.224xlarge", "t3.medium"])
def test_ec2_type_spellings_are_accepted_on_aws(instance_type: str) -> None:
    assert parse({**AWS, "controlPlane": {"instanceType": instance_type}}).control_plane.instance_type == instance_type


def test_kind_keeps_the_control_plane_count() -> None:
    assert parse({**KIND, "controlPlane": {"count": 1}}).control_plane.count == 1
