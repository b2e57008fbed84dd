"""The fake snap `kubectl` ($SNAP/bin/kubectl): `label node` only, judged as the API server would.

The caller's identity comes from the kubeconfig file (the fake k8s writes `user: <name>` into each:
kubelet.conf is `system:node:<node>`). Rules: the Node authorizer lets a node identity change its
own Node only (plugin/pkg/auth/authorizer/node/node_authorizer.go); NodeRestriction refuses a node
changing labels under kubernetes.io/k8s.io other than the kubelet's own set, and any
node-restriction.kubernetes.io label (plugin/pkg/admission/noderestriction/admission.go
getForbiddenLabels); label syntax per apimachinery validation.go; kubectl's own rules for
`--overwrite` (staging/src/k8s.io/kubectl/pkg/cmd/label/label.go). Messages as kubectl prints them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from components.settings import k8s_syntax
from tests.fakes.k8s_snap import k8sd, world


class KubectlError(Exception):
    pass


def _identity(kubeconfig: str) -> str:
    try:
        text = Path(kubeconfig).read_text()
    except OSError:
        raise KubectlError(f"error: stat {kubeconfig}: no such file or directory") from None
    for line in text.splitlines():
        if line.startswith("user: "):
            return line[6:].strip()
    raise KubectlError(f"error: {kubeconfig}: no user in kubeconfig")


def run(args: Sequence[str]) -> str:
    args = list(args)
    kubeconfig = None
    if "--kubeconfig" in args:
        i = args.index("--kubeconfig")
        kubeconfig = args[i + 1]
        del args[i:i + 2]
    overwrite = "--overwrite" in args
    args = [a for a in args if a != "--overwrite"]
    if len(args) < 3 or args[:2] != ["label", "node"]:
        raise KubectlError(f"error: the fake kubectl models `label node` only, got {args}")
    if kubeconfig is None:
        raise KubectlError("error: no kubeconfig (the fake has no in-cluster config)")
    who = _identity(kubeconfig)
    node_name, specs = args[2], args[3:]
    labels: dict[str, str] = {}
    for spec in specs:
        key, eq, value = spec.partition("=")
        if not eq:
            raise KubectlError(f"error: invalid label spec: {spec}")
        problems = k8s_syntax.qualified_name_problems(key) + k8s_syntax.label_value_problems(value)
        if problems:
            raise KubectlError(f'error: invalid label spec: "{spec}": {"; ".join(problems)}')
        labels[key] = value
    with world.locked() as state:
        if not k8sd.node_registered(state, node_name):
            raise KubectlError(f'Error from server (NotFound): nodes "{node_name}" not found')
        node = state["cluster"]["nodes"][node_name]
        if who.startswith("system:node:"):
            me = who.removeprefix("system:node:")
            if me != node_name:
                raise KubectlError(f'Error from server (Forbidden): nodes "{node_name}" is forbidden: User "{who}" '
                                   f'cannot patch resource "nodes" in API group "" at the cluster scope: node '
                                   f"'{me}' cannot modify node '{node_name}'")
            changed = sorted(k for k, v in labels.items() if node["labels"].get(k) != v)
            forbidden = [k for k in changed if not k8s_syntax.kubelet_may_set(k)]
            if forbidden:
                raise KubectlError(f'Error from server (Forbidden): nodes "{node_name}" is forbidden: is not allowed '
                                   f"to modify labels: {', '.join(forbidden)}")
        if not overwrite:
            for k, v in labels.items():
                if k in node["labels"] and node["labels"][k] != v:
                    raise KubectlError(f"error: '{k}' already has a value ({node['labels'][k]}), and --overwrite "
                                       "is false")
        node["labels"].update(labels)
        world.record(state, os.environ["FAKE_INSTANCE"], f"kubectl label node {node_name} as {who}")
    return f"node/{node_name} labeled"


def main(argv: Sequence[str]) -> int:
    import sys

    try:
        print(run(argv))
    except KubectlError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0
