"""KindCluster: a kind cluster whose simulated GPU workers mirror one AWS pool (thin shell).

`kind create cluster` / `kind delete cluster` run through pulumi-command's local.Command with
the generated config (components/kind/config.py); any config change replaces the cluster (kind
cannot change a cluster in place), deleting the old one first because the name is reused.
"""

from __future__ import annotations

import pulumi
from pulumi_command import local

from ..kind import commands
from ..kind.config import kind_facts, kind_problems, render_kind_config
from ..kube.cluster_handle import ClusterHandleBase
from ..settings.facts import mirrored_pool
from ..settings.model import Settings
from ..tables import tokens
from .gate import ready_and_provider

# All kind nodes start together; after `kind create --wait` the workers need about a minute more.
API_READY_TIMEOUT_SECONDS = 600


class KindCluster(ClusterHandleBase):
    """Implements components.kube.cluster_handle.ClusterHandle for platform `kind`."""

    def __init__(self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(tokens.KIND_CLUSTER, name, None, opts)
        if settings.platform != "kind":
            raise ValueError(f"KindCluster needs settings with platform kind, got {settings.platform}")
        problems = kind_problems(settings)
        if problems:
            raise ValueError("kind preview cannot run: " + "; ".join(f"{p}: {r}" for p, r in problems))
        self._facts = kind_facts(settings)
        self.config_text = render_kind_config(settings)
        cluster_name = settings.kind.cluster_name

        self.command = local.Command(
            f"{name}-kind",
            create=commands.CREATE,
            update=commands.UPDATE,
            delete=commands.DELETE,
            environment=commands.environment(cluster_name, self.config_text),
            # A changed config or name means a new cluster: kind has no in-place update.
            triggers=[cluster_name, self.config_text],
            # stdout is the kubeconfig: kept out of the logs, stored as a secret, never fed back
            # into the next run's environment.
            logging=local.Logging.STDERR,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                additional_secret_outputs=["stdout"],
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create="30m", update="5m", delete="10m"),
            ),
        )
        self._kubeconfig: pulumi.Output[str] = pulumi.Output.secret(self.command.stdout)
        self._ready, self._provider = ready_and_provider(
            name,
            self,
            self._kubeconfig,
            min_ready_nodes=1 + mirrored_pool(settings).desired_size,
            timeout_seconds=API_READY_TIMEOUT_SECONDS,
            depends_on=[self.command],
        )
        self.register_outputs({
            "clusterName": cluster_name,
            "kubeconfig": self._kubeconfig,
            "endpoint": self._ready.endpoint,
        })

