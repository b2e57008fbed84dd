"""ck8s-gpu Pulumi program: load settings, wire the components, export. Nothing else lives here."""

import pulumi

from components.runtime.plain_errors import quiet_engine_shutdown
from components.validate import load_settings
from components.wiring import Names, wire

quiet_engine_shutdown()  # after a failure, the engine's own error is what the user reads
settings = load_settings()  # validated before any resource exists; bad input ends here cleanly
kubeconfig = pulumi.Config("ck8s-gpu").get_secret("kubeconfig") if settings.traits.needs_kubeconfig else None

stack = wire(settings, kubeconfig, Names.program(settings))  # the same wiring GpuAddons/GpuCluster use

pulumi.export("platform", settings.platform)
pulumi.export("environment", settings.environment)
pulumi.export("clusterName", settings.cluster_name)
pulumi.export("kubernetesTrack", settings.kubernetes.track)  # what `ck8s-gpu upgrade` upgrades from
pulumi.export("kubeconfig", stack.cluster.kubeconfig)
pulumi.export("addons", [addon.name for addon in stack.addons.graph.order])
pulumi.export("smokeReport", stack.smoke.report)
if stack.backup:
    pulumi.export("backupBucket", stack.backup.bucket_name)
