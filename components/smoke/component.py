"""SmokeTest: installs charts/gpu-smoke-test after the add-ons it needs, then gates the update on
the smoke run (see docs/adr for why a dynamic resource and not a Helm test hook)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..kube.charts import release_chart_path
from ..kube.cluster_handle import ClusterHandle
from ..settings.model import Settings
from ..tables import pins, tokens
from .plan import smoke_plan
from .provider import SmokeRun
from .run import namespace_labels
from .values import CHART

TYPE = tokens.SMOKE_TEST
# Installing is quick (a ConfigMap, claim templates, suspended Jobs); the run has its own budget.
HELM_TIMEOUT_SECONDS = 300


class SmokeTest(pulumi.ComponentResource):
    report: pulumi.Output[Any]

    def __init__(
        self,
        name: str,
        settings: Settings,
        cluster: ClusterHandle,
        depends_on: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
        *,
        addons_digest: str = "",
    ) -> None:
        """`addons_digest` (AddonSet.fingerprint) joins the run id: a changed add-on release (a
        new pin) runs the smoke test again, after it, since `depends_on` holds every release."""
        super().__init__(TYPE, name, None, opts)
        if not settings.smoke_test.enabled:
            self.report = pulumi.Output.from_input({"status": "disabled", "reason": "smokeTest.enabled is false"})
            self.register_outputs({"report": self.report})
            return
        # The track joins too: after a track upgrade (ADR 0015) the smoke test runs again, last.
        nonce = f"{addons_digest}|track={settings.kubernetes.track}"
        plan = smoke_plan(settings, cluster.facts, pins.image("smoke-test"), nonce=nonce)
        self.run_id = plan.run_id
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=cluster.provider)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=plan.namespace, labels=namespace_labels(plan.expectations)),
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[cluster.ready])),
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-chart",
            k8s.helm.v3.ReleaseArgs(
                name=plan.release,
                chart=release_chart_path(CHART),
                namespace=plan.namespace,
                values=plan.values,
                timeout=HELM_TIMEOUT_SECONDS,
                cleanup_on_fail=True,
                max_history=5,
            ),
            opts=pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=[cluster.ready, self.namespace, *depends_on])
            ),
        )
        self.run = SmokeRun(
            f"{name}-run",
            kubeconfig=cluster.kubeconfig,
            spec=plan.spec(),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release],
                                        additional_secret_outputs=["kubeconfig"]),
        )
        self.report = self.run.report
        self.register_outputs({"report": self.report, "runId": plan.run_id, "namespace": plan.namespace})
