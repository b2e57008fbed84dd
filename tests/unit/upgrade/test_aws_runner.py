"""The SSM runner and the node discovery against botocore's Stubber: every request is validated
against the pinned botocore service models (parameter names, types, minimums; responses too)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from components.tables.labels import CLUSTER_TAG, POOL_TAG, ROLE_TAG
from components.upgrade.aws_runner import SsmRunner, discover

CID = "a1b2c3d4-0000-4000-8000-00000000abcd"  # SSM command ids are UUIDs (length 36 in the model)


def ssm_client():  # type: ignore[no-untyped-def]
    return boto3.client("ssm", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")


def test_a_command_runs_through_aws_run_shell_script_and_returns_its_output() -> None:
    client = ssm_client()
    with Stubber(client) as stub:
        stub.add_response("send_command", {"Command": {"CommandId": CID}}, {
            "InstanceIds": ["i-0abc"], "DocumentName": "AWS-RunShellScript", "Comment": "ck8s-gpu upgrade",
            "Parameters": {"commands": ["snap refresh k8s --channel=1.35-classic/stable"],
                           "executionTimeout": ["900"]},
            "TimeoutSeconds": 60,
        })
        stub.add_client_error("get_command_invocation", "InvocationDoesNotExist")
        stub.add_response("get_command_invocation", {"Status": "InProgress"})
        stub.add_response("get_command_invocation", {"Status": "Success", "ResponseCode": 0,
                                                     "StandardOutputContent": "refreshed\n",
                                                     "StandardErrorContent": ""})
        result = SsmRunner("eu-west-1", client, poll_seconds=0).run(
            "i-0abc", ["snap", "refresh", "k8s", "--channel=1.35-classic/stable"], 900)
        stub.assert_no_pending_responses()
    assert (result.code, result.stdout) == (0, "refreshed\n")


def test_a_failed_command_keeps_its_exit_code_and_an_undelivered_one_is_not_zero() -> None:
    client = ssm_client()
    with Stubber(client) as stub:
        for status, code in (("Failed", 1), ("Undeliverable", -1)):
            stub.add_response("send_command", {"Command": {"CommandId": CID}})
            stub.add_response("get_command_invocation", {"Status": status, "ResponseCode": code,
                                                         "StandardErrorContent": "boom", "StatusDetails": status})
        runner = SsmRunner("eu-west-1", client, poll_seconds=0)
        failed = runner.run("i-0abc", ["false"], 60)
        lost = runner.run("i-0abc", ["true"], 60)
    assert (failed.code, failed.stderr) == (1, "boom")
    assert lost.code == 255 and lost.stderr.startswith("SSM Undeliverable")


def test_discover_finds_control_planes_in_name_order_and_workers_by_pool() -> None:
    ec2 = boto3.client("ec2", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")

    def inst(iid: str, dns: str, **tags: str) -> dict:  # type: ignore[type-arg]
        return {"InstanceId": iid, "PrivateDnsName": dns, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}

    cluster = {CLUSTER_TAG: "ck8s-dev-eu-west-1"}
    with Stubber(ec2) as stub:
        stub.add_response("describe_instances", {"Reservations": [{"Instances": [
            inst("i-2", "ip-10-0-1-2.eu-west-1.compute.internal", Name="ck8s-dev-eu-west-1-cp-1",
                 **{ROLE_TAG: "control-plane"}, **cluster),
            inst("i-1", "ip-10-0-1-1.eu-west-1.compute.internal", Name="ck8s-dev-eu-west-1-cp-0",
                 **{ROLE_TAG: "control-plane"}, **cluster),
            inst("i-3", "ip-10-0-2-3.eu-west-1.compute.internal", **{ROLE_TAG: "worker", POOL_TAG: "l4"}, **cluster),
        ]}]}, {"Filters": [{"Name": f"tag:{CLUSTER_TAG}", "Values": ["ck8s-dev-eu-west-1"]},
                           {"Name": "instance-state-name", "Values": ["running"]}]})
        cps, pools = discover("eu-west-1", "ck8s-dev-eu-west-1", ec2)
    assert [c.instance_id for c in cps] == ["i-1", "i-2"]
    assert [(n.instance_id, n.pool, n.role) for n in pools["l4"]] == [("i-3", "l4", "worker")]


def test_the_model_refuses_what_aws_refuses() -> None:
    """botocore validates minimums from the service model (not maximums): a delivery timeout below
    SSM's 30 s fails here, so the runner's own value is checked by the test above."""
    client = ssm_client()
    with Stubber(client) as stub, pytest.raises(Exception, match="TimeoutSeconds"):
        stub.add_response("send_command", {"Command": {"CommandId": CID}})
        client.send_command(InstanceIds=["i-1"], DocumentName="AWS-RunShellScript", TimeoutSeconds=10,
                            Parameters={"commands": ["true"]})
