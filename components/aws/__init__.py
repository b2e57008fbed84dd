"""AWS platform: Canonical Kubernetes control planes and self-joining GPU node pools on EC2."""

from components.aws.cluster import AwsCluster

__all__ = ["AwsCluster"]
