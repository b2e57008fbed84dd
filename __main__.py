"""ck8s-gpu Pulumi program: load settings, wire the components, export. Nothing else lives here."""

import pulumi

from components.addons.addon_set import AddonSet
from components.addons.selected import backup_target_needed
from components.dr.backup_target import BackupTarget
from components.plain_errors import quiet_engine_shutdown
from components.platforms import make_cluster
from components.smoke.component import SmokeTest
from components.validate import load_settings

quiet_engine_shutdown()  # after a failure, the engine's own error is what the user reads
settings = load_settings()  # validated before any resource exists; bad input ends here cleanly
kubeconfig = pulumi.Config("ck8s-gpu").get_secret("kubeconfig") if settings.traits.needs_kubeconfig else None

cluster = make_cluster(settings.cluster_name, settings, kubeconfig)
# Velero's off-region bucket, key and IAM user; the add-on gets the access key and waits for them.
backup = BackupTarget("backup", settings) if backup_target_needed(settings) else None
addons = AddonSet(
    "gpu-stack", settings, cluster,
    extra_values={"velero": backup.velero_values()} if backup else None,
    extra_dependencies={"velero": backup.ready} if backup else None,
)
# After every add-on release; a changed release (a new pin) runs it again (docs/addons.md, Upgrades).
smoke = SmokeTest("smoke-test", settings, cluster, depends_on=addons.smoke_dependencies,
                  addons_digest=addons.fingerprint)

pulumi.export("platform", settings.platform)
pulumi.export("environment", settings.environment)
pulumi.export("clusterName", settings.cluster_name)
pulumi.export("kubernetesTrack", settings.kubernetes.track)  # what `ck8s-gpu upgrade` upgrades from
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("addons", [addon.name for addon in addons.graph.order])
pulumi.export("smokeReport", smoke.report)
if backup:
    pulumi.export("backupBucket", backup.bucket_name)
