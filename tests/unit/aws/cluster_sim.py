"""A committed AWS stack's cluster, simulated: the node script from its rendered user-data on a
fleet of fake instances, with the IAM policies, secrets, SSM document and Auto Scaling group tags
our own code produces for that stack (so the fake judges exactly what `pulumi up` would create)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.addons.selected import addon_facts
from components.aws import iam, launch, mint
from components.aws import userdata as ud
from components.aws.inventory import api_lb_name, mint_document_name
from components.aws.registry import mirror_pull_statements
from components.aws.secrets import pki_secret_document
from components.aws.tags import node_tags
from components.settings.model import Settings
from tests.fakes.k8s_snap.fleet import Fleet, Instance
from tests.unit.aws.conftest import settings_for
from tests.unit.aws.tools import require

ACCOUNT = "123456789012"
LB = "ck8s-api-0123456789.elb.amazonaws.com"
PEM = "-----BEGIN CERTIFICATE-----\nCACERT\n-----END CERTIFICATE-----\n"
CA_KEY = "-----BEGIN RSA PRIVATE KEY-----\nCAKEYsecret\n-----END RSA PRIVATE KEY-----\n"
CLIENT_CA_KEY = "-----BEGIN RSA PRIVATE KEY-----\nCLIENTKEYsecret\n-----END RSA PRIVATE KEY-----\n"
TRACKS = ("1.34-classic", "1.35-classic", "1.36-classic")


def with_track(track: str) -> Any:
    """The stack on another track. Its snap pin (and the node images made with it) belongs to its
    own track: on another one the nodes install that track's snap from the store and pull."""
    def change(raw: dict[str, Any]) -> None:
        kube = raw.setdefault("kubernetes", {})
        if kube.get("track", track) != track:
            kube.pop("snap", None)
            raw.get("images", {}).pop("preloaded", None)
            on_track_images(raw, kube.get("track", ""), track)
        kube["track"] = track

    return change


@dataclass
class SimCluster:
    settings: Settings
    fleet: Fleet
    auth_arn: str
    pki_arn: str
    auth_token: str
    boot: ud.ClusterBoot
    cp_boot: ud.ControlPlaneBoot
    # Nodes of image-program images get their media on disk as they are added; False: the test
    # writes them itself (a missing or unacked file).
    auto_media: bool = True

    @property
    def cluster(self) -> str:
        return self.settings.cluster_name

    def asg_name(self, pool: str) -> str:
        return f"{self.cluster}-pool-{pool}-asg-0a1b2c3"

    def control_plane(self, index: int) -> Instance:
        data = (ud.render_bootstrap_control_plane(self.boot, self.cp_boot) if index == 0
                else ud.render_joining_control_plane(self.boot))
        ccm = addon_facts(self.settings).cloud_controller_manager
        policy = iam.control_plane_policy([self.auth_arn, self.pki_arn], ccm, mirror_pull_statements(self.settings))
        tags = node_tags(self.settings, "control-plane", f"{self.cluster}-cp-{index}")
        return self._media(self.fleet.add_instance(data, tags, [policy], "control-plane"), self.boot.control_plane_arch)

    def worker(self, pool_index: int = 0, boot: ud.ClusterBoot | None = None) -> Instance:
        """`boot`: what a launch template tells its nodes, if not the cluster's (e.g. a newer track)."""
        pool = self.settings.node_pools[pool_index]
        data = ud.render_gpu_worker(boot or self.boot, ud.worker_boot(self.settings, pool))
        scope = iam.Scope("aws", self.settings.region or "", ACCOUNT, self.cluster)
        policy = iam.worker_policy(scope, mint_document_name(self.cluster), mirror_pull_statements(self.settings))
        tags = node_tags(self.settings, "worker", f"{self.cluster}-{pool.name}", pool=pool.name)
        inst = self.fleet.add_instance(data, tags, [policy], "worker", asg=self.asg_name(pool.name))
        if pool.ami is None:
            return inst
        if self.settings.gpu_stack.toolkit == "host":  # in the image whatever media a test gives it
            from tests.unit.aws.node_media import toolkit

            toolkit(inst)  # a GPU node image of the image program (components/images/document.py)
        return self._media(inst, ud.worker_boot(self.settings, pool).arch)

    def _media(self, inst: Instance, arch: str) -> Instance:
        """A node booting an image of the image program has its media on disk (node_media.py),
        the snap at the stack's pin for the node's architecture."""
        pin = self.settings.kubernetes.snap
        if not self.auto_media or (not (pin and pin.from_image) and not self.settings.images.preloaded):
            return inst
        from tests.unit.aws.node_media import media

        revision = pin.revisions.get(arch) if pin else None  # type: ignore[call-overload]
        return media(inst, k8s=(str(revision or 1), pin.version if pin else "v0.0.0"))


def on_track_images(raw: dict[str, Any], old: str, track: str) -> None:
    """An image line named for a track (`.../k8s-<track>`, the control planes') is that track's: a stack
    moved to another track names that one's line (settings refuse the old one: rules/cluster.py)."""
    for holder in [raw.get("controlPlane") or {}, *(raw.get("nodePools") or [])]:
        ami = holder.get("ami")
        if isinstance(ami, str) and old and ami.endswith(f"/k8s-{old}"):
            holder["ami"] = ami.removesuffix(old) + track


def from_the_store(raw: dict[str, Any]) -> None:
    """The stack with its nodes on the store path: the snap from the Snap Store, images pulled
    (the path a node on Canonical's AMI takes; the scenarios of the store's own behaviour)."""
    raw.setdefault("kubernetes", {}).pop("snap", None)
    raw.get("images", {}).pop("preloaded", None)


def simulate(
    tmp: Path, stack: str, track: str | None = None, boot_override: dict[str, Any] | None = None,
    store: bool = False,
) -> SimCluster:
    for tool in ("curl", "openssl"):  # the script's curl talks TLS to the fake k8sd for real
        require(tool)
    changes = [c for c in (with_track(track) if track else None, from_the_store if store else None) if c]

    def change(raw: dict[str, Any]) -> None:
        for c in changes:
            c(raw)

    settings = settings_for(stack, change if changes else None)
    region = settings.region or ""
    arn = f"arn:aws:secretsmanager:{region}:{ACCOUNT}:secret:{settings.cluster_name}-{{}}-AbCdEf"
    auth_arn, pki_arn = arn.format("join-auth"), arn.format("ca-keys")
    boot = ud.cluster_boot(settings, auth_arn, mint_document_name(settings.cluster_name), addon_facts(settings))
    if boot_override:
        boot = ud.ClusterBoot(**{**boot.__dict__, **boot_override})
    cp_boot = ud.control_plane_boot(settings, pki_arn)
    fleet = Fleet(tmp / "world", region)
    token = secrets.token_hex(24)
    with fleet.mutate() as state:
        state["secrets"][auth_arn] = {"value": token}
        state["secrets"][pki_arn] = {"value": pki_secret_document(PEM, CA_KEY, PEM, CLIENT_CA_KEY)}
        # The API NLB exists (still provisioning) by the time a control plane looks it up.
        state["load_balancers"][api_lb_name(settings.cluster_name)] = {"dns": LB}
        state["documents"][mint_document_name(settings.cluster_name)] = {
            "content": mint.mint_document(settings.cluster_name)
        }
        for pool in settings.node_pools:
            tags = node_tags(settings, "worker", f"{settings.cluster_name}-{pool.name}", pool=pool.name)
            # What the pool's launch template gives its instances (components/aws/node_pool.py).
            state["asgs"][f"{settings.cluster_name}-pool-{pool.name}-asg-0a1b2c3"] = {
                "tags": tags, "instance_initiated_shutdown_behavior": launch.SHUTDOWN_BEHAVIOR}
    return SimCluster(settings, fleet, auth_arn, pki_arn, token, boot, cp_boot)
