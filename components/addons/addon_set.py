"""AddonSet: the enabled add-ons as Helm releases, in dependency order, each waiting for readiness.

A thin shell over pure functions (graph.install_graph, each add-on's values). Every release is a
`helm.v3.Release` (hooks run; see docs/adr on Release vs Chart) with an explicit timeout, atomic
(a failed upgrade is rolled back by Helm and stops `pulumi up` naming the release); the GPU
Operator's release is followed by a gate on ClusterPolicy `cluster-policy` reconciled onto the GPU
nodes (components/addons/cluster_policy_ready.py). Pulumi
updates a resource only after what it depends on, so a changed pin upgrades releases in the
graph's order, and the smoke test, which depends on every release on the GPU path, runs after
them (docs/addons.md).
Values some add-ons need from other components (Velero's access key from BackupTarget) come in
through `extra_values` / `extra_dependencies`, keyed by add-on name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..kube.charts import release_chart_path
from ..kube.cluster_handle import ClusterHandle
from ..settings.model import Settings
from ..settings.secrets import SecretText, redacted
from ..tables import tokens
from .base import Addon, AddonContext, deep_merge
from .catalog import BY_NAME, WIRED_VALUES
from .cluster_policy_ready import ClusterPolicyReady
from .crds import BY_CHART
from .crds_first import CrdsFirst
from .dra_mode_guard import DraModeGuard
from .gateway_ready import GatewayReady
from .gpu_cluster_ready import GpuClusterReady
from .gpu_operator import (
    CLUSTER_POLICY,
    GPU_CLUSTER,
    expected_gpu_nodes,
    later_gpu_nodes,
    manages_dra,
    operator_digest,
)
from .graph import AddonGraphError, InstallGraph, contexts, install_graph

PSA = "pod-security.kubernetes.io"
_LEVELS = ("restricted", "baseline", "privileged")
# Headroom over Helm's own timeout, so Helm reports the real failure before Pulumi gives up.
ENGINE_GRACE_SECONDS = 120


def namespace_labels(level: str) -> dict[str, str]:
    """Enforce `level`; warn and audit against `restricted` so drift towards less is visible."""
    return {f"{PSA}/enforce": level, f"{PSA}/warn": "restricted", f"{PSA}/audit": "restricted"}


def namespace_levels(addons: tuple[Addon, ...]) -> dict[str, str]:
    """Namespace -> the most permissive level any add-on installed there needs."""
    out: dict[str, str] = {}
    for a in addons:
        if not a.owns_namespace:
            continue
        current = out.get(a.namespace, "restricted")
        out[a.namespace] = max(current, a.pod_security, key=_LEVELS.index)
    return out


def release_values(addon: Addon, ctx: AddonContext, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Computed values (images under the stack's mirror), then the wiring's `extra` (e.g.
    credentials), then the stack's `values:` override: the stack keeps the last word."""
    computed = addon.mirrored_values(ctx)
    computed = deep_merge(computed, extra) if extra else computed
    return deep_merge(computed, addon.addon_settings(ctx.settings).values)


def with_secrets(values: Any) -> Any:
    """Values with each secret of the stack's (components/settings/secrets.py SecretText) as a
    Pulumi secret at its place: the state, previews and plans hold `[secret]` there, the rest of
    the values stay readable."""
    if isinstance(values, SecretText):
        return pulumi.Output.secret(values.reveal())
    if isinstance(values, Mapping):
        return {k: with_secrets(v) for k, v in values.items()}
    if isinstance(values, list | tuple):
        return [with_secrets(v) for v in values]
    return values


def wiring_problems(graph: InstallGraph, settings: Settings, supplied: Iterable[str]) -> list[str]:
    """Extra values/dependencies for an add-on that does not exist (a typo in the wiring), and
    enabled add-ons that would install broken without the values the wiring should supply.
    Extras for a known add-on the stack switched off are ignored: the settings decide."""
    supplied = set(supplied)
    problems = [f"extra values or dependencies for unknown add-on '{n}'" for n in sorted(supplied - set(BY_NAME))]
    for name, problem in WIRED_VALUES.items():
        if name in graph.names and name not in supplied and (why := problem(settings)) is not None:
            problems.append(f"{name}: {why}")
    return problems


def release_args(addon: Addon, ctx: AddonContext) -> dict[str, Any]:
    """The helm.v3.Release inputs of one add-on (pure: what `plan` shows and tests assert)."""
    args: dict[str, Any] = {
        "name": addon.release_name,
        "namespace": addon.namespace,
        "values": release_values(addon, ctx),
        "timeout": addon.timeout_seconds,
        # A failed upgrade is rolled back by Helm to the last deployed revision (and a failed
        # install uninstalled), so the cluster keeps running the old version and `pulumi up`
        # fails naming the release and Helm's reason (docs/addons.md, Upgrades).
        "atomic": True,
        "cleanup_on_fail": True,  # objects the failed attempt created are deleted first
        "wait_for_jobs": True,
        "max_history": 10,
        "create_namespace": False,  # the set owns namespaces (Pod Security labels)
        "allow_null_values": True,  # a null in values deletes a chart default on purpose
    }
    if addon.disable_openapi_validation:
        args["disable_openapi_validation"] = True
    repo = addon.repository(ctx.settings)
    if repo is None:  # this repository's chart, from charts/
        assert addon.local_chart is not None
        args["chart"] = release_chart_path(addon.local_chart)
        return args
    args["version"] = ctx.version
    if repo.startswith("oci://"):
        args["chart"] = f"{repo}/{addon.chart_name}"
    else:
        args["chart"] = addon.chart_name
        args["repository_opts"] = {"repo": repo}
    return args


def crds_first(addon: Addon, ctx: AddonContext) -> dict[str, Any] | None:
    """Where to pull the chart whose CRDs must be applied before its release (or the release
    manifest of CRDs no chart carries: `Addon.crd_manifest`), or None when the chart upgrades its
    own (components/addons/crds.py) or is this repository's."""
    if addon.crd_manifest is not None:
        m = addon.crd_manifest(ctx.settings)
        return {"manifest": m.url, "version": m.version, "expect_annotation": m.annotation}
    repo = addon.repository(ctx.settings)
    handling = BY_CHART.get(addon.chart_pin or "")
    if repo is None or handling is None or not handling.manual:
        return None
    return {"repository": repo, "chart": addon.chart_name, "version": ctx.version}


def release_source(addon: Addon, ctx: AddonContext) -> str:
    """What a pin decides for a release, readably: `<repository>/<chart>@<version>`, or
    `charts/<chart>@local` for this repository's chart installed from its path."""
    repo = addon.repository(ctx.settings)
    return f"{repo or 'charts'}/{addon.chart_name}@{ctx.version}"


def set_fingerprint(addons: Sequence[Addon], sources: Mapping[str, str]) -> str:
    """One digest of the sources of the releases on the GPU path (`Addon.on_gpu_path`): the smoke
    test's run id includes it, so changing such an add-on's pin (version or repository) runs the
    smoke test again after the upgraded releases; a monitoring or backup pin does not.
    Values stay out: they differ between the regions of one stamped stack, whose smoke runs must
    not (tests/unit/test_region_parity.py); a values change re-runs it through smokeTest.trigger."""
    on_path = {a.name for a in addons if a.on_gpu_path}
    lines = "\n".join(f"{name}={source}" for name, source in sorted(sources.items()) if name in on_path)
    return hashlib.sha256(lines.encode()).hexdigest()[:16]


class AddonSet(pulumi.ComponentResource):
    releases: dict[str, pulumi.Resource]
    ready: dict[str, pulumi.Resource]  # what a dependant of each add-on waits for
    namespaces: dict[str, k8s.core.v1.Namespace]
    smoke_dependencies: list[pulumi.Resource]  # the ready gate of every release on the GPU path
    graph: InstallGraph
    sources: dict[str, str]  # add-on -> release_source (repository/chart@version)
    fingerprint: str  # of every source: part of the smoke test's run id

    def __init__(
        self,
        name: str,
        settings: Settings,
        cluster: ClusterHandle,
        opts: pulumi.ResourceOptions | None = None,
        *,
        extra_values: Mapping[str, pulumi.Input[Mapping[str, Any]]] | None = None,
        extra_dependencies: Mapping[str, Sequence[pulumi.Resource]] | None = None,
    ) -> None:
        """`extra_values[addon]` is deep-merged over that add-on's computed values (under the
        stack's own override) inside an Output: a secret input keeps the release's values secret.
        `extra_dependencies[addon]`: resources its release must wait for."""
        extra_values = dict(extra_values or {})
        extra_dependencies = dict(extra_dependencies or {})
        try:  # one clean error listing every problem, before any resource exists
            graph = install_graph(settings)
            problems = wiring_problems(graph, settings, [*extra_values, *extra_dependencies])
            if problems:
                raise AddonGraphError(problems)
        except AddonGraphError as exc:
            raise pulumi.RunError(str(exc)) from None
        super().__init__(tokens.ADDON_SET, name, None, opts)
        self.graph = graph
        self.releases, self.ready, self.namespaces = {}, {}, {}
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=cluster.provider)

        for ns, level in namespace_levels(graph.order).items():
            self.namespaces[ns] = k8s.core.v1.Namespace(
                f"{name}-ns-{ns}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels=namespace_labels(level)),
                opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[cluster.ready])),
            )

        ctxs = contexts(graph, settings, cluster.facts)
        self.sources = {a.name: release_source(a, ctxs[a.name]) for a in graph.order}
        self.fingerprint = set_fingerprint(graph.order, self.sources)
        # Helm never upgrades these charts' crds/: the new ones go first (before their release, and
        # before any release that needs only their CRDs: InstallGraph.crd_edges).
        crds: dict[str, CrdsFirst] = {}
        for addon in graph.order:
            pull = crds_first(addon, ctxs[addon.name])
            if pull is not None:
                crds[addon.name] = CrdsFirst(
                    f"{name}-{addon.name}-crds", cluster.kubeconfig, **pull,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.ready]),
                )
        # A deployed stack cannot switch who runs DRA in one `up` (docs/adr/0048): the guard's check
        # fails the preview, and both DRA-bearing releases wait for it, so nothing has moved by then.
        guard = (DraModeGuard(f"{name}-dra-mode", settings.gpu_stack.dra_managed_by,
                              opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.ready]))
                 if "gpu-operator" in graph.names else None)
        for addon in graph.order:  # dependencies first: their ready gates exist already
            ctx = ctxs[addon.name]
            args = release_args(addon, ctx)
            repo = args.pop("repository_opts", None)
            args["values"] = with_secrets(args["values"])
            if addon.name in extra_values:
                args["values"] = pulumi.Output.from_input(extra_values[addon.name]).apply(
                    lambda extra, a=addon, c=ctx: pulumi.Output.from_input(with_secrets(release_values(a, c, extra))))
            depends: list[pulumi.Resource] = [cluster.ready]
            depends += [self.namespaces[addon.namespace]] if addon.owns_namespace else []
            depends += [self.ready[d] for d in graph.edges[addon.name]]
            depends += extra_dependencies.get(addon.name, ())
            depends += [crds[addon.name]] if addon.name in crds else []
            depends += [guard] if guard is not None and addon.name in ("gpu-operator", "dra-driver") else []
            for provider in graph.crd_edges.get(addon.name, ()):
                if provider not in crds:  # a catalog error: tests/unit/addons keep it from happening
                    raise pulumi.RunError(f"{addon.name} waits for the CRDs of {provider}, whose chart applies "
                                          "its own (no CrdsFirst): order it after the release instead")
                depends.append(crds[provider])
            grace = f"{addon.timeout_seconds + ENGINE_GRACE_SECONDS}s"
            # atomic: a failed upgrade waits up to `timeout` and its rollback as long again.
            update_grace = f"{2 * addon.timeout_seconds + ENGINE_GRACE_SECONDS}s"
            release = k8s.helm.v3.Release(
                f"{name}-{addon.name}",
                k8s.helm.v3.ReleaseArgs(
                    **args,
                    repository_opts=k8s.helm.v3.RepositoryOptsArgs(**repo) if repo else None,
                ),
                opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(
                    depends_on=depends,
                    custom_timeouts=pulumi.CustomTimeouts(create=grace, update=update_grace),
                    aliases=[addon.previous_urn(settings, pulumi.get_stack(), pulumi.get_project())]
                    if addon.previous_urn else None,
                )),
            )
            self.releases[addon.name] = release
            self.ready[addon.name] = release
            if addon.gateway is not None:
                self.ready[addon.name] = GatewayReady(
                    f"{name}-{addon.name}-gateway-ready", cluster.kubeconfig,
                    gateway_class=addon.gateway.gateway_class, controller=addon.gateway.controller,
                    namespace=addon.gateway.namespace, object_name=addon.gateway.name,
                    timeout_seconds=addon.timeout_seconds,
                    trigger=operator_digest(ctx.version, redacted(release_values(addon, ctx))),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[release]))
            if addon.readiness == "operator":
                gate = dict(
                    operator_namespace=addon.namespace,
                    min_gpu_nodes=expected_gpu_nodes(settings),
                    # Capacity Block pools count from their block's start, judged when the gate runs.
                    later_gpu_nodes=later_gpu_nodes(settings),
                    timeout_seconds=addon.timeout_seconds,
                    # Anything the operator consumes: a values-only change waits again too.
                    trigger=operator_digest(ctx.version, redacted(release_values(addon, ctx))),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[release]),
                )
                if manages_dra(settings):  # docs/adr/0048: the GPUCluster instead of a ClusterPolicy
                    self.ready[addon.name] = GpuClusterReady(
                        f"{name}-{addon.name}-gpu-cluster-ready", cluster.kubeconfig, object_name=GPU_CLUSTER, **gate)
                else:
                    self.ready[addon.name] = ClusterPolicyReady(
                        f"{name}-{addon.name}-cluster-policy-ready", cluster.kubeconfig, object_name=CLUSTER_POLICY,
                        **gate)

        # The smoke test runs after every release and gate on the GPU path: it is what an upgrade is
        # judged by. Monitoring and backups install beside it (docs/adr/0019): nothing it checks
        # reads them (its DCGM check reads the exporter Service of the GPU Operator).
        self.smoke_dependencies = [self.ready[a.name] for a in graph.order if a.on_gpu_path]
        self.register_outputs({
            "addons": [a.name for a in graph.order],
            "versions": {a.name: ctxs[a.name].version for a in graph.order},
            "sources": self.sources,
        })
