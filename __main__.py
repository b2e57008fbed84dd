"""ck8s-gpu Pulumi program: load settings, wire the components, export. Nothing else lives here."""

import pulumi

from components.settings.from_pulumi import load_settings

settings = load_settings()  # validated before any resource exists; bad input ends here cleanly

pulumi.export("platform", settings.platform)
pulumi.export("clusterName", settings.cluster_name)
