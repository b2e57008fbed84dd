"""replace-node's pure parts: finding the node, refusing the only control plane, the instance URN."""

from __future__ import annotations

import pytest

from components.upgrade import replace
from components.upgrade.executor import NodeRef

CPS = [NodeRef("i-1", "ip-10-0-1-1.x", "control-plane"), NodeRef("i-2", "ip-10-0-1-2.x", "control-plane"),
       NodeRef("i-3", "ip-10-0-1-3.x", "control-plane")]
POOLS = {"l4": [NodeRef("i-9", "ip-10-0-2-9.x", "worker", "l4")]}


def test_find_names_every_running_node_when_it_misses() -> None:
    assert replace.find(CPS, POOLS, "ip-10-0-2-9.x").instance_id == "i-9"
    with pytest.raises(replace.ReplaceError, match=r"no running node named nope .*ip-10-0-1-1\.x.*ip-10-0-2-9\.x"):
        replace.find(CPS, POOLS, "nope")


def test_the_only_control_plane_is_refused_unless_forced() -> None:
    only = CPS[:1]
    assert "would be lost" in (replace.refusal(only, only[0], force=False) or "")
    assert replace.refusal(only, only[0], force=True) is None
    assert replace.refusal(CPS, CPS[0], force=False) is None
    assert replace.refusal(only, POOLS["l4"][0], force=False) is None


def test_the_steps_say_what_happens_from_which_node() -> None:
    steps = replace.describe(CPS[1], CPS)
    assert "ip-10-0-1-1.x, ip-10-0-1-3.x" in steps[0] and "k8s remove-node ip-10-0-1-2.x` on ip-10-0-1-1.x" in steps[2]
    assert "desired capacity kept" in replace.describe(POOLS["l4"][0], CPS)[1]


def test_instance_urn_comes_from_the_state_by_instance_id() -> None:
    resources = [{"type": "aws:ec2/instance:Instance", "urn": "urn:a", "outputs": {"id": "i-1"}},
                 {"type": "aws:ec2/instance:Instance", "urn": "urn:b", "outputs": {"id": "i-2"}}]
    assert replace.instance_urn(resources, "i-2") == "urn:b"
    with pytest.raises(replace.ReplaceError, match="not a resource of this stack"):
        replace.instance_urn(resources, "i-9")


def test_plan_without_credentials_prints_both_procedures(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`replace-node --plan` needs EC2 to know the node's role; without credentials it prints the
    steps for either role from what the settings know (issue 46), and a real replacement still fails."""
    from botocore.exceptions import NoCredentialsError

    from components.settings import parse_settings
    from components.upgrade import aws_runner

    def no_credentials(*_: object) -> None:
        raise NoCredentialsError()

    monkeypatch.setattr(aws_runner, "discover", no_credentials)
    base = {"platform": "aws", "environment": "dev", "region": "eu-west-1",
            "network": {"availabilityZones": ["eu-west-1a", "eu-west-1b"]}}
    three = parse_settings({**base, "controlPlane": {"count": 3},
                            "network": {"azCount": 3, "availabilityZones": ["eu-west-1a", "eu-west-1b", "eu-west-1c"]}})
    assert replace.run(three, "s", "ip-10-0-1-23", False, lambda _s: None, plan_only=True) == 0
    out = capsys.readouterr().out
    assert "is one of the 3 control plane(s):" in out and "`k8s remove-node ip-10-0-1-23` on" in out
    assert "is a GPU pool's node:" in out and "desired capacity kept" in out
    one = parse_settings(base)
    assert replace.run(one, "s", "ip-10-0-1-23", False, lambda _s: None, plan_only=True) == 0
    assert "refused: ip-10-0-1-23 is the only control plane" in capsys.readouterr().out
    with pytest.raises(NoCredentialsError):
        replace.run(three, "s", "ip-10-0-1-23", False, lambda _s: None, plan_only=False)
