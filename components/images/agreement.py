"""A stack and the image lines it boots agree on the Kubernetes they carry (issue 46): an image line
of images/ (its `kubernetes.track` and `snap` pin, one revision for its architecture) that a pool or
the control planes name by parameter in the stack's region must carry the stack's track, snap version
and that architecture's revision. A node of a stack with `snap.fromImage` installs the snap from the
image's disk and fails at boot without the pinned revision there (components/aws/node/ck8s-node.sh);
one without it still runs the image's preloaded images of the wrong track. Pure: the caller reads the
image stack files."""

from __future__ import annotations

from collections.abc import Iterable

from ..settings.facts import ami_fields
from ..settings.model import Settings
from ..settings.problems import Problem
from .settings import ImageSettings


def booted_lines(settings: Settings, lines: Iterable[tuple[str, ImageSettings]]
                 ) -> list[tuple[str, str, ImageSettings]]:
    """(field path, line name, line) for each image line a pool or the control planes name by its
    parameter, published in the stack's region."""
    return [(where, name, line) for name, line in lines for where, ami in ami_fields(settings)
            if ami is not None and ami == line.parameter and settings.region in line.regions]


def agreement_problems(settings: Settings, lines: Iterable[tuple[str, ImageSettings]]) -> list[Problem]:
    """Each booted image line that carries another track, snap version or revision than the stack
    pins, at the field that names it, with the line to rebuild."""
    out: list[Problem] = []
    k = settings.kubernetes
    for where, name, line in booted_lines(settings, lines):
        differs: list[str] = []
        if line.track != k.track:
            differs.append(f"track {line.track} (the stack: {k.track})")
        carried = line.kubernetes.snap if line.kubernetes else None
        if k.snap is not None and carried is not None:
            if carried.version != k.snap.version:
                differs.append(f"k8s {carried.version} (the stack pins {k.snap.version})")
            wanted = k.snap.revisions.get(line.architecture)
            if wanted is not None and carried.revision != wanted:
                differs.append(f"{line.architecture} revision {carried.revision} (the stack pins {wanted})")
        if differs:
            out.append((where, f"names image line {name} (images/Pulumi.{name}.yaml), which carries "
                        f"{', '.join(differs)}: move its kubernetes.track and snap to the stack's and rebuild it "
                        f"(`pulumi up -C images -s {name}`) before this stack boots it"))
    return out
