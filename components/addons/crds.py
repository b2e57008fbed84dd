"""What happens to each pinned chart's CRDs on `helm upgrade`, read from the charts themselves.

Helm installs a chart's `crds/` directory on install only and never upgrades it: install skips a
CRD that exists (helm v3.18.6 pkg/action/install.go, installCRDs: "CRD ... is already present.
Skipping."); pkg/action/upgrade.go has no CRD step at all. CRDs under `templates/` are ordinary
release objects and are upgraded. So each chart either brings its own upgrade mechanism (a hook
Job), which the values builders turn on where it can run pinned, or the program applies the new
version's `crds/` before the release (`manual`: components/addons/crds_first.py, docs/addons.md).
`tests/unit/addons/test_upgrades.py` checks every pinned chart has a row and that the values set
what the row says.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CrdHandling:
    chart: str  # key of pins.CHARTS
    crds: str  # where the chart keeps its CRDs
    mechanism: str  # the chart's own way to upgrade them, or "none"
    ours: str  # what this project sets, and why
    source: str  # the upstream files read (tag, commit, path)
    # Values key (dotted) our builder sets true to turn the mechanism on; None: nothing to set.
    switch: str | None = None
    manual: bool = False  # no usable mechanism: CrdsFirst applies the chart's crds/ before the release


CRD_HANDLING: tuple[CrdHandling, ...] = (
    CrdHandling(
        chart="gpu-operator",
        crds="`crds/` (ClusterPolicy, NVIDIADriver, GPUCluster, ComputeDomain, ComputeDomainClique); "
             "NFD subchart `crds/`",
        mechanism="`operator.upgradeCRD` (default true): pre-upgrade hook Job `gpu-operator-upgrade-crd` runs "
                  "the operator image's `manage-crds apply` for ClusterPolicy, NVIDIADriver, GPUCluster (and "
                  "NFD's with `nfd.enabled`); not the ComputeDomain CRDs (the DRA driver's, here)",
        ours="`operator.upgradeCRD: true`, explicitly",
        source="NVIDIA/gpu-operator v26.7.0 (10ee5b3) deployments/gpu-operator/templates/upgrade_crd.yaml, "
               "values.yaml `operator.upgradeCRD`",
        switch="operator.upgradeCRD",
    ),
    CrdHandling(
        chart="dra-driver-nvidia-gpu",
        crds="`crds/` (ComputeDomain, ComputeDomainClique)",
        mechanism="none: upstream's upgrade guide applies the new CRDs with `kubectl apply` before "
                  "`helm upgrade`",
        ours="nothing to set; the new version's `crds/` is applied before the release (CrdsFirst)",
        source="kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (764900e) and main 95932046 (chart 0.5.0-dev) "
               "deployments/helm/dra-driver-nvidia-gpu/crds/ (the same two files in both); site/content/docs/"
               "upgrade.md:64 (docs/upgrade.md at v0.4.1)",
        manual=True,
    ),
    CrdHandling(
        chart="kai-scheduler",
        crds="`crds/` (Queue, PodGroup, BindRequest, Config, SchedulingShard, Topology)",
        mechanism="pre-install,pre-upgrade hook Job `crd-upgrader` (image `crd-upgrader` at the chart's "
                  "version), always on: no switch",
        ours="nothing to set",
        source="kai-scheduler/KAI-Scheduler v0.17.0 (f218c69) deployments/kai-scheduler/templates/hooks/pre/"
               "crd-upgrader.yaml",
    ),
    CrdHandling(
        chart="fake-gpu-operator",
        crds="`crds/` (ClusterPolicy, ComputeDomain); NodeResourceTopology under `templates/`",
        mechanism="none for `crds/` (the `templates/` CRD is upgraded as a release object)",
        ours="nothing to set; the new version's `crds/` is applied before the release (CrdsFirst)",
        source="run-ai/fake-gpu-operator v0.2.0 (3a3f644) deploy/fake-gpu-operator/crds/, templates/status-updater/"
               "noderesourcetopology-crd.yaml",
        manual=True,
    ),
    CrdHandling(
        chart="kube-prometheus-stack",
        crds="subchart `charts/crds/crds/` (monitoring.coreos.com, prometheus-operator at the chart's appVersion)",
        mechanism="`crds.upgradeJob.enabled` (default false, \"preview\"): pre-install/pre-upgrade/pre-rollback "
                  "Job, `kubectl apply --server-side --force-conflicts` of the bundled CRDs",
        ours="left off: its init container is `docker.io/busybox:latest` and the chart adds a busybox digest "
             "only when the unrelated key `crds.upgradeJob.image.sha` is set (templates/upgrade/job.yaml "
             "lines 41-42), so it cannot run pinned; the new version's CRDs (subchart `crds/`) are "
             "applied before the release instead (CrdsFirst)",
        source="prometheus-community/helm-charts kube-prometheus-stack-88.5.3 (ea930ba) charts/kube-prometheus-"
               "stack/values.yaml `crds.upgradeJob`, charts/crds/templates/upgrade/job.yaml, README.md "
               "\"Upgrading Chart\"",
        manual=True,
    ),
    CrdHandling(
        chart="aws-cloud-controller-manager",
        crds="none",
        mechanism="-",
        ours="nothing to do",
        source="kubernetes/cloud-provider-aws helm-chart-aws-cloud-controller-manager-0.0.10 (059b0b6) "
               "charts/aws-cloud-controller-manager/",
    ),
    CrdHandling(chart="aws-efa-k8s-device-plugin", crds="none", mechanism="-", ours="nothing to do",
                source="aws/eks-charts (5239609) stable/aws-efa-k8s-device-plugin/ at chart v0.5.30: templates/ holds "
                       "only the DaemonSet and NOTES.txt, no crds/"),
    CrdHandling(
        chart="karpenter",
        crds="`crds/` (NodePool, NodeClaim, NodeOverlay, CapacityBuffer, EC2NodeClass): a link to pkg/apis/crds in "
             "the repository, packaged as files in the published chart",
        mechanism="none in this chart: upstream's upgrade guide installs the separate `karpenter-crd` chart (the same "
                  "CRDs under templates/) or applies them with kubectl before upgrading",
        ours="nothing to set; the new version's `crds/` is applied before the release (CrdsFirst)",
        source="aws/karpenter-provider-aws v1.15.0 charts/karpenter (no crds/ entry in the module zip, which drops "
               "links), charts/karpenter-crd/templates, pkg/apis/crds/",
        manual=True,
    ),
    CrdHandling(
        chart="kuberay-operator",
        crds="`crds/` (RayCluster, RayJob, RayService; about 3 MiB, over client-side apply's annotation limit)",
        mechanism="none in this chart: upstream's upgrade notes apply the new CRDs with `kubectl apply "
                  "--server-side` (or `create`/`replace`) before upgrading",
        ours="nothing to set; the new version's `crds/` is applied server-side before the release (CrdsFirst)",
        source="ray-project/kuberay v1.5.2 (9f65eca) helm-chart/kuberay-operator/crds/ (the same blobs as "
               "ray-operator/config/crd/bases/), templates/ (no CRD, no hook)",
        manual=True,
    ),
    CrdHandling(
        chart="keda",
        crds="`templates/crds/` (ScaledObject, ScaledJob, TriggerAuthentication, ClusterTriggerAuthentication, "
             "CloudEventSource, ClusterCloudEventSource), rendered while `crds.install` (default true)",
        mechanism="release objects: Helm upgrades them with the release",
        ours="nothing to set (`crds.install` stays true)",
        source="kedacore/charts v2.20.2 (1444d00 on main) keda/templates/crds/, values.yaml `crds.install`; the "
               "2.21.1 chart not read (docs/compatibility.md)",
    ),
    CrdHandling(
        chart="traefik",
        crds="`crds/` (traefik.io IngressRoute, Middleware, TraefikService...; hub.traefik.io); the Gateway API "
             "CRDs are not in the chart",
        mechanism="none for `crds/`",
        ours="the chart's `crds/` stay as Helm first installed them: the add-on turns off the provider that reads "
             "them (`providers.kubernetesCRD.enabled: false`), so nothing depends on their version. The Gateway "
             "API CRDs it does use are applied before every release from the pinned release's "
             "standard-install.yaml (CrdsFirst, `manifest`), bundle version checked",
        source="traefik/traefik-helm-chart v41.3.0 (a8a66d0) traefik/crds/, README.md (Gateway API CRDs applied "
               "by the user from the gateway-api release), templates/rbac/clusterrole.yaml",
    ),
    CrdHandling(
        chart="velero",
        crds="`crds/` (Backup, Restore, Schedule, BackupStorageLocation...)",
        mechanism="`upgradeCRDs` (default true): pre-install/pre-upgrade/pre-rollback Job whose init container "
                  "copies `sh` and `kubectl` out of `kubectl.image` (`docker.io/bitnamilegacy/kubectl:<cluster "
                  "minor>`), then feeds `velero install --crds-only --dry-run -o yaml` to `kubectl apply`",
        ours="`upgradeCRDs: false` (ADR 0010): that image is unmaintained, reportedly without a 1.34 tag; "
             "the new version's `crds/` is applied before the release instead (CrdsFirst)",
        source="vmware-tanzu/helm-charts velero-11.1.1 (5b4838c) charts/velero/templates/upgrade-crds/"
               "upgrade-crds.yaml, values.yaml `upgradeCRDs`, `kubectl.image`",
        manual=True,
    ),
)

BY_CHART: dict[str, CrdHandling] = {h.chart: h for h in CRD_HANDLING}
