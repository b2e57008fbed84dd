"""The AWS side of the executor: run a command on an instance through SSM, and find the nodes.

SSM Run Command with the AWS-managed `AWS-RunShellScript` document (runs as root; every node has
the SSM agent and AmazonSSMManagedInstanceCore, components/aws/iam.py). The caller's credentials
need ssm:SendCommand on the cluster's instances and ec2:DescribeInstances; the same credentials
that run `pulumi up` have them. Output comes back through GetCommandInvocation, which keeps the
first 24,000 characters of stdout (hence kubeview's projections).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from typing import Any

from ..tables.labels import CLUSTER_TAG, POOL_TAG, ROLE_TAG
from .executor import NodeRef, Result

TERMINAL = {"Success", "Failed", "Cancelled", "TimedOut", "DeliveryTimedOut", "ExecutionTimedOut", "Undeliverable",
            "Terminated", "InvalidPlatform", "AccessDenied"}


class SsmRunner:
    def __init__(self, region: str, client: Any = None, poll_seconds: float = 3.0) -> None:
        if client is None:
            import boto3

            client = boto3.client("ssm", region_name=region)
        self.ssm, self.poll = client, poll_seconds

    def run(self, instance_id: str, argv: Sequence[str], timeout: float) -> Result:
        sent = self.ssm.send_command(
            InstanceIds=[instance_id],
            DocumentName="AWS-RunShellScript",
            Comment="ck8s-gpu upgrade",
            Parameters={"commands": [shlex.join(argv)], "executionTimeout": [str(max(30, int(timeout)))]},
            TimeoutSeconds=60,  # delivery: an offline agent fails fast instead of queueing the command
        )
        command_id = sent["Command"]["CommandId"]
        deadline = time.monotonic() + timeout + 120
        while True:
            time.sleep(self.poll)
            try:
                inv = self.ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id)
            except self.ssm.exceptions.InvocationDoesNotExist:
                continue  # not registered yet
            if inv["Status"] in TERMINAL:
                code = int(inv.get("ResponseCode", -1))
                err = inv.get("StandardErrorContent", "")
                if inv["Status"] not in ("Success", "Failed"):
                    err = f"SSM {inv['Status']}: {inv.get('StatusDetails', '')} {err}".strip()
                    code = code if code > 0 else 255
                return Result(code, inv.get("StandardOutputContent", ""), err)
            if time.monotonic() > deadline:
                return Result(255, "", f"SSM command {command_id} still {inv['Status']} after {int(timeout)}s")


def discover(region: str, cluster: str, client: Any = None) -> tuple[list[NodeRef], dict[str, list[NodeRef]]]:
    """Running instances of the cluster by their tags: control planes (by Name) and pool workers."""
    if client is None:
        import boto3

        client = boto3.client("ec2", region_name=region)
    filters = [{"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
               {"Name": "instance-state-name", "Values": ["running"]}]
    cps: list[tuple[str, NodeRef]] = []
    pools: dict[str, list[NodeRef]] = {}
    for page in client.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page["Reservations"]:
            for inst in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
                # The node script names the node after the private DNS name (components/aws/scripts).
                name = inst["PrivateDnsName"]
                # EC2's Architecture (x86_64 | arm64 | ...) in the snap store's words: the pinned
                # revision a node refreshes to is its architecture's (ADR 0039).
                arch = {"x86_64": "amd64"}.get(inst.get("Architecture", "x86_64"), inst.get("Architecture", ""))
                if tags.get(ROLE_TAG) == "control-plane":
                    cps.append((tags.get("Name", ""), NodeRef(inst["InstanceId"], name, "control-plane", arch=arch)))
                elif tags.get(POOL_TAG):
                    pool = tags[POOL_TAG]
                    pools.setdefault(pool, []).append(NodeRef(inst["InstanceId"], name, "worker", pool, arch))
    return [ref for _, ref in sorted(cps, key=lambda c: c[0])], {p: sorted(n, key=lambda r: r.name)
                                                                  for p, n in pools.items()}
