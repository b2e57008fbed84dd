"""Canonical Kubernetes control planes and an L4 GPU pool on AWS, in your VPC and subnets, with
the GPU add-ons and the DRA smoke test. The nodes join by themselves."""

import pulumi

from ck8s_gpu import GpuCluster, GpuClusterArgs, GpuPool, SmokeTestArgs

config = pulumi.Config()
cluster = GpuCluster("gpu", GpuClusterArgs(
    region=config.require("region"),
    vpc_id=config.require("vpcId"),
    private_subnet_ids=config.require_object("privateSubnetIds"),
    pools=[GpuPool(name="l4", instance_type="g6.xlarge", nodes=1, max_nodes=4)],
    smoke_test=SmokeTestArgs(gpus=1),
    tags={"team": config.get("team") or "ml-platform"},
))

pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("smokeReport", cluster.smoke_report)
