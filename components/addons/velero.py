"""Velero backups of cluster objects and volumes to an encrypted bucket in another region.

The values are built in ONE place, components/addons/velero_values.py (the same module the DR
tooling reads); this module only declares the add-on. The access key Velero writes with is not
in these values: BackupTarget supplies it as a secret through AddonSet(extra_values=...), and a
stack that brings its own Secret sets `credentials.existingSecret` in the add-on's values.
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from ..tables import pins
from .base import Addon, AddonContext, Default
from .image_refs import Entry, ImageRef, mirrored_ref, split_repository
from .velero_values import velero_values

NAMESPACE = "velero"


def values(ctx: AddonContext) -> dict[str, Any]:
    return velero_values(ctx.settings)


def _check(settings: Settings) -> tuple[str, ...]:
    if settings.backup is None or settings.backup.region is None:
        return ("needs settings.backup.region (the bucket's region, not the cluster's)",)
    return ()


def credentials_problem(settings: Settings) -> str | None:
    """Why an AddonSet without wiring-supplied values would install a Velero that never backs up
    (the chart's credentials Secret would be empty); None when the stack brings its own."""
    credentials = ADDON.addon_settings(settings).values.get("credentials")
    if isinstance(credentials, dict) and (credentials.get("existingSecret") or credentials.get("useSecret") is False):
        return None
    return ("its AWS credentials come from BackupTarget: pass AddonSet(extra_values={'velero': "
            "target.velero_values()}), or set gpuStack.addons.velero.values.credentials.existingSecret")


# --- Images: velero 11.1.1 ---------------------------------------------------------------------------
# vmware-tanzu/helm-charts tag velero-11.1.1 (commit 5b4838c): the server Deployment and the node
# agent run `<image.repository>:<image.tag>` (templates/deployment.yaml, node-agent-daemonset.yaml);
# `velero/velero` has no host: Docker Hub. The kubectl hook images are off at our values
# (upgradeCRDs false, cleanUpCRDs false, no namespace.labels).
_VELERO = "vmware-tanzu/helm-charts velero-11.1.1 (5b4838c) charts/velero/values.yaml"
_PLUGIN = pins.IMAGES["velero-plugin-aws"]


IMAGES: tuple[Entry, ...] = (
    Entry("velero", "velero", ImageRef("docker.io", "velero/velero", "v1.17.0", _VELERO),
          keys=("image.repository", "image.tag"), mirror=(("image.repository", "velero/velero"),)),
    # Our init container (components/addons/velero_values.py _aws_plugin): a list entry, rewritten
    # by `_mirror_init_containers` as the whole initContainers list.
    Entry("velero", "velero-plugin-for-aws",
          ImageRef(*split_repository(_PLUGIN.repository), _PLUGIN.tag,
                   "components/tables/pins.py IMAGES velero-plugin-aws",
                   digest=_PLUGIN.digest),
          keys=("initContainers[0].image",), mirror=()),
)


def _mirror_init_containers(settings: Settings, mirror: str) -> dict[str, Any]:
    """Lists replace on merge: the init containers again, each image under the mirror."""
    inits = velero_values(settings).get("initContainers")
    return {"initContainers": [{**c, "image": mirrored_ref(c["image"], mirror)} for c in inits]} if inits else {}


def _default(settings: Settings) -> Default:
    """on with settings.backup"""
    # Backups are asked for by `backup:`; the program then creates the bucket Velero writes to.
    return "on" if settings.backup is not None else "off"


ADDON = Addon(
    name="velero",
    settings_key="velero",
    description="Velero backups of cluster objects and volumes (node-agent file-system backups) to an "
                "encrypted, versioned bucket in another region",
    namespace=NAMESPACE,
    # Elsewhere nothing creates a bucket or credentials: enable it explicitly with your own.
    platform_defaults={"aws": _default, "existing": "off", "kind": "off", "local": "off"},
    wired_values_problem=credentials_problem,
    # The node agent mounts the kubelet's pod directories (hostPath), which `baseline` forbids.
    pod_security="privileged",
    values=values,
    chart_pin="velero",
    images=IMAGES,
    mirror_extra=_mirror_init_containers,
    timeout_seconds=10 * 60,
    check=_check,
    on_gpu_path=False,
)
