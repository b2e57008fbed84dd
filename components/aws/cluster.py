"""AwsCluster: Canonical Kubernetes on EC2 with GPU node pools that join on their own.

Implements components.kube.cluster_handle.ClusterHandle. Wiring only: every decision lives in a pure module
(network plan, security-group rules, IAM policies, user-data, kubeconfig, CCM values).

    network ─ security groups ─ API load balancer ────────────────┐
    PKI (CA, client CA, admin cert) ─ secrets (auth token, CA material) ├─ control planes ─ gates ─ ready
    IAM roles (control planes: those secrets; workers: none) ──────┘                        │
    kubeconfig (from state) ─ Kubernetes provider ─ CCM ──────────────────── after ready ──┤
    SSM mint document ─ GPU node pools (launch template + ASG) ──────────── after ready ──┘
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..facts.cluster import AddonFacts, cluster_facts
from ..facts.efa import efa_enabled
from ..k8s_ready import ApiReady
from ..kube.cluster_handle import ClusterHandleBase
from ..settings.model import NodePoolSettings, Settings
from ..tables import tokens
from ..tables.instance_types import Arch, arch_for_instance_type
from ..upgrade.resources import NodeUpgrade, PoolUpgrade, UpgradeComplete
from .ami import ssm_parameter, ubuntu_ami
from .control_plane import ControlPlane
from .endpoints import VpcEndpoints
from .iam import NodeRole, Scope, control_plane_policy, policy_json, worker_policy
from .inventory import mint_document_name, node_role_name
from .karpenter import controller_policy, ec2_node_class_manifest
from .kubeconfig import api_server_url, render_kubeconfig
from .launch import launch_plan
from .load_balancer import ApiLoadBalancer
from .mint import mint_document
from .network import AwsNetwork
from .node_pool import GpuNodePool
from .pki import ClusterPki
from .registry import RegistryCache, cache_rules, mirror_pull_statements
from .secrets import ClusterSecrets
from .security_groups import ClusterSecurityGroups
from .tags import default_tags
from .userdata import (
    ClusterBoot,
    cluster_boot,
    control_plane_boot,
    render_bootstrap_control_plane,
    render_gpu_worker,
    render_joining_control_plane,
    worker_boot,
)


class NodeUpgrades(pulumi.ComponentResource):
    """Groups the per-node upgrade resources; depending on it waits for all of them."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(tokens.NODE_UPGRADES, name, None, opts)


class AwsCluster(ClusterHandleBase):
    def __init__(self, name: str, settings: Settings, addons: AddonFacts,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(tokens.AWS_CLUSTER, name, None, opts)
        if settings.platform != "aws" or settings.region is None:
            raise ValueError("AwsCluster needs settings with platform aws and a region")
        self._facts = cluster_facts(settings)
        cluster = settings.cluster_name

        # An explicit provider: no ambient aws:region, and every resource carries the stack's tags.
        aws_provider = aws.Provider(
            f"{name}-aws",
            region=settings.region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=default_tags(settings)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        on_aws = pulumi.ResourceOptions(parent=self, providers={"aws": aws_provider})

        network = AwsNetwork(f"{name}-network", settings, on_aws)
        groups = ClusterSecurityGroups(f"{name}-sg", settings, network.vpc_id, network.vpc_cidr, on_aws)
        if groups.endpoints is not None:  # network.endpoints: create (docs/adr/0041)
            VpcEndpoints(f"{name}-endpoints", settings, network.vpc_id, network.private_subnet_ids,
                         network.private_route_table_ids, groups.endpoints.id, on_aws)
        pki = ClusterPki(f"{name}-pki", settings, pulumi.ResourceOptions(parent=self))
        secrets = ClusterSecrets(
            f"{name}-secrets",
            settings,
            (pki.ca_cert_pem, pki.ca_key_pem),
            (pki.client_ca_cert_pem, pki.client_ca_key_pem),
            on_aws,
        )
        ccm = addons.cloud_controller_manager
        mirror = mirror_pull_statements(settings)  # images.mirror on this Region's ECR (docs/adr/0043)
        if cache_rules(settings):
            RegistryCache(f"{name}-registry-cache", settings, on_aws)
        cp_role = NodeRole(
            f"{name}-control-plane",
            pulumi.Output.all(secrets.auth_secret_arn, secrets.pki_secret_arn).apply(
                lambda arns: policy_json(control_plane_policy([str(a) for a in arns], ccm, mirror))
            ),
            on_aws,
            role_name=node_role_name(cluster, "control-plane"),
        )
        # Workers get their join token from a control plane through this document, and no secret.
        mint_name = mint_document_name(cluster)
        mint = aws.ssm.Document(
            f"{name}-mint-worker-token",
            name=mint_name,
            document_type="Command",
            document_format="JSON",
            content=json.dumps(mint_document(cluster), sort_keys=True),
            opts=pulumi.ResourceOptions.merge(on_aws, pulumi.ResourceOptions(delete_before_replace=True)),
        )
        on_aws_invoke = pulumi.InvokeOutputOptions(parent=self, provider=aws_provider)
        identity = aws.get_caller_identity_output(opts=on_aws_invoke)
        partition = aws.get_partition_output(opts=on_aws_invoke)
        worker_role = NodeRole(
            f"{name}-worker",
            pulumi.Output.all(partition.partition, identity.account_id).apply(
                lambda v: policy_json(worker_policy(Scope(str(v[0]), settings.region or "", str(v[1]), cluster),
                                                    mint_name, mirror))
            ),
            on_aws,
            role_name=node_role_name(cluster, "worker"),
        )
        api = ApiLoadBalancer(
            f"{name}-api",
            settings,
            network.vpc_id,
            network.private_subnet_ids,
            network.public_subnet_ids,
            groups.api_lb.id,
            on_aws,
        )

        self._kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(api.dns_name, pki.ca_cert_pem, pki.admin_cert_pem, pki.admin_key_pem).apply(
                lambda v: render_kubeconfig(cluster, api_server_url(v[0]), v[1], v[2], v[3])
            )
        )

        # Nothing a node is told depends on the NLB: control planes look its DNS name up at boot
        # (docs/adr/0019), so no instance waits the 2-3 minutes the NLB takes to become active.
        boot: pulumi.Output[ClusterBoot] = pulumi.Output.all(secrets.auth_secret_arn, mint.name).apply(
            lambda v: cluster_boot(settings, v[0], v[1], addons)
        )
        cp_boot = secrets.pki_secret_arn.apply(lambda arn: control_plane_boot(settings, arn))
        amis: dict[Arch | str, pulumi.Output[str]] = {}

        def ami(instance_type: str, named: str | None = None) -> pulumi.Output[str]:
            """`named` (a pool's `ami` setting: an `ami-` id as it is, else an SSM parameter path to look
            up), or Canonical's Ubuntu for the instance type's architecture. Both looked up once, in the
            stack's region (the explicit provider: this component has none of its own to inherit)."""
            arch = arch_for_instance_type(instance_type)
            key: Arch | str = named or arch
            if key not in amis:
                if named is None:
                    amis[key] = ubuntu_ami(arch, self, aws_provider)
                elif named.startswith("ami-"):
                    amis[key] = pulumi.Output.from_input(named)
                else:
                    amis[key] = aws.ssm.get_parameter_output(name=named, opts=on_aws_invoke).value
            return amis[key]

        control_plane = ControlPlane(
            f"{name}-cp",
            settings,
            ami=ami(settings.control_plane.instance_type, settings.control_plane.ami),
            subnet_ids=network.private_subnet_ids,
            security_group_ids=[groups.nodes.id, groups.control_plane.id],
            instance_profile=cp_role.instance_profile,
            grants=cp_role.grants,
            bootstrap_user_data=pulumi.Output.all(boot, cp_boot).apply(
                lambda v: render_bootstrap_control_plane(v[0], v[1])
            ),
            join_user_data=boot.apply(render_joining_control_plane),
            target_group_arn=api.target_group_arn,
            listener=api.listener,
            kubeconfig=self._kubeconfig,
            opts=on_aws,
        )
        api_ready: ApiReady = control_plane.ready

        # Track upgrades in place (ADR 0015): control planes one at a time, each after the previous
        # one is back; created as no-ops, they act when the track changes.
        upgrades = NodeUpgrades(f"{name}-upgrades", pulumi.ResourceOptions(parent=self))
        on_upgrades = pulumi.ResourceOptions(parent=upgrades)
        policy = settings.kubernetes.upgrade
        region = settings.region
        previous: pulumi.Resource = api_ready
        for i, instance in enumerate(control_plane.instances):
            previous = NodeUpgrade(
                f"{name}-cp-{i}-upgrade", track=settings.kubernetes.track, region=region, cluster=cluster,
                instance_id=instance.id, policy=policy, snap=settings.kubernetes.snap,
                opts=pulumi.ResourceOptions.merge(on_upgrades, pulumi.ResourceOptions(depends_on=[previous])),
            )
        control_planes_upgraded = previous

        # Pools launch with the control planes (docs/adr/0019): a worker boots and installs its snap
        # meanwhile, and its join loop, not the graph, waits for a control plane. The mint document
        # refuses a worker newer than any control plane, so a launch template changed by a track
        # upgrade before the control planes are upgraded never puts a kubelet above an API server.
        self.node_pools: list[GpuNodePool] = []
        pool_upgrades: list[PoolUpgrade] = []
        for pool in settings.node_pools:
            worker = worker_boot(settings, pool)
            self.node_pools.append(
                GpuNodePool(
                    f"{name}-pool-{pool.name}",
                    settings,
                    pool,
                    ami=ami(pool.instance_type, pool.ami),
                    subnet_ids=network.private_subnets_in(pool.availability_zone),
                    security_group_ids=[groups.nodes.id],
                    efa_security_group_ids=[groups.efa.id] if groups.efa is not None and efa_enabled(pool) else [],
                    instance_profile=worker_role.instance_profile,
                    grants=[*worker_role.grants, mint],
                    user_data=boot.apply(lambda b, w=worker: render_gpu_worker(b, w)),
                    opts=on_aws,
                )
            )
            pool_upgrades.append(PoolUpgrade(
                f"{name}-pool-{pool.name}-upgrade", track=settings.kubernetes.track, region=region, cluster=cluster,
                pool=pool.name, policy=policy, snap=settings.kubernetes.snap,
                opts=pulumi.ResourceOptions.merge(on_upgrades, pulumi.ResourceOptions(
                    depends_on=[control_planes_upgraded, self.node_pools[-1].launch_template])),
            ))
        # Autoscaled pools (ADR 0049): the floor is the group above; Karpenter launches the rest with
        # each pool's EC2NodeClass, the launch template's twin, and the controller's IAM policy on
        # the control-plane role (Karpenter runs there on the host network).
        scaled = [(pool, group) for pool, group in zip(settings.node_pools, self.node_pools, strict=True)
                  if pool.autoscaling is not None]
        self._node_classes = None
        if scaled:
            self._node_classes = pulumi.Output.all(*[
                self._node_class(settings, pool, group, worker_role, network, groups, boot)
                for pool, group in scaled])
            ssm = sorted({p.ami or ssm_parameter(arch_for_instance_type(p.instance_type))
                          for p, _ in scaled if not (p.ami or "").startswith("ami-")})
            aws.iam.RolePolicy(
                f"{name}-karpenter-controller",
                role=cp_role.role.id,
                policy=pulumi.Output.all(partition.partition, identity.account_id, worker_role.role.arn).apply(
                    lambda v: policy_json(controller_policy(
                        Scope(str(v[0]), settings.region or "", str(v[1]), cluster), worker_role_arn=str(v[2]),
                        ssm_parameters=ssm, pricing=not settings.offline))),
                opts=on_aws,
            )
        UpgradeComplete(
            f"{name}-upgrade-complete", track=settings.kubernetes.track, region=region, cluster=cluster, policy=policy,
            snap=settings.kubernetes.snap,
            opts=pulumi.ResourceOptions.merge(on_upgrades, pulumi.ResourceOptions(
                depends_on=[control_planes_upgraded, *pool_upgrades])),
        )
        upgrades.register_outputs({})
        # Add-ons and the smoke test follow the nodes: their values change with the track.
        self._ready = upgrades

        self._provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self._kubeconfig,
            # A rotated admin certificate or a changed kubeconfig must not replace every object.
            cluster_identifier=cluster,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[api_ready]),
        )
        # The AWS cloud controller manager is an add-on (components/addons/aws_cloud_controller_manager.py),
        # and so is Karpenter (components/addons/karpenter.py): node_classes completes its objects.
        self.register_outputs({
            "kubernetesTrack": settings.kubernetes.track,
            "kubeconfig": self._kubeconfig,
            "apiEndpoint": api.dns_name.apply(api_server_url),
            "controlPlanePrivateIps": [i.private_ip for i in control_plane.instances],
        })

    @staticmethod
    def _node_class(settings: Settings, pool: NodePoolSettings, group: GpuNodePool, worker_role: NodeRole,
                    network: AwsNetwork, groups: ClusterSecurityGroups,
                    boot: pulumi.Output[ClusterBoot]) -> pulumi.Output[dict[str, Any]]:
        """The pool's EC2NodeClass (components/aws/karpenter.py) from what its launch template gets."""
        # An instance profile's id is its name (terraform-provider-aws iam_instance_profile.go: d.SetId(name)).
        worker = worker_boot(settings, pool)
        efa_groups = [groups.efa.id] if groups.efa is not None and efa_enabled(pool) else []
        # The group's placement group (its id is its name), or the existing one the pool names.
        named = launch_plan(pool).placement
        placement: pulumi.Input[str] | None = (group.placement_group.id if group.placement_group is not None
                                               else named.group_name if named is not None else None)
        subnets = pulumi.Output.all(*network.private_subnets_in(pool.availability_zone))
        security_groups = pulumi.Output.all(groups.nodes.id, *efa_groups)
        return pulumi.Output.all(
            boot, worker_role.instance_profile.id, subnets, security_groups, placement,
        ).apply(lambda v: ec2_node_class_manifest(
            settings, pool, ami=pool.ami or ssm_parameter(arch_for_instance_type(pool.instance_type)),
            user_data=render_gpu_worker(v[0], worker), instance_profile=str(v[1]), subnet_ids=[str(x) for x in v[2]],
            security_group_ids=[str(x) for x in v[3]], placement_group=None if v[4] is None else str(v[4])))

    @property
    def node_classes(self) -> pulumi.Output[list[dict[str, Any]]] | None:
        """Each autoscaled pool's EC2NodeClass, for the karpenter-nodepools add-on (None: no such pool)."""
        return self._node_classes

