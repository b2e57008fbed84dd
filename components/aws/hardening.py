"""Instance hardening shared by control planes and node pools (pure argument builders)."""

from __future__ import annotations

from typing import Any

# IMDSv2 only. Hop limit 1: pods without host networking cannot reach instance credentials (which
# may read the join auth secret); host-network agents (the CCM) still can.
IMDS = {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 1}
# Canonical's Ubuntu AMIs boot from /dev/sda1.
ROOT_DEVICE = "/dev/sda1"


def root_volume(size_gib: int) -> dict[str, Any]:
    """Encrypted gp3 root volume (the account's default EBS key), deleted with its instance."""
    return {"volume_type": "gp3", "volume_size": size_gib, "encrypted": True, "delete_on_termination": True}
