"""AWS platform: Canonical Kubernetes control planes and self-joining GPU node pools on EC2.

`AwsCluster` loads on first use: the pure modules here (names, tags, inventory, user-data) are read
by the settings gate and the policies without the AWS SDK.
"""

from typing import Any

__all__ = ["AwsCluster"]


def __getattr__(name: str) -> Any:
    if name == "AwsCluster":
        from .cluster import AwsCluster

        return AwsCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
