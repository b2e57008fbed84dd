"""The fake snap `kubectl` ($SNAP/bin/kubectl) at kubectl v1.34, judged as the API server would:
`label node`, and for the cluster admin (admin.conf) `get nodes|pods -o json`, `cordon`,
`uncordon` and `drain`.

The caller's identity comes from the kubeconfig file (the fake k8s writes `user: <name>` into each:
kubelet.conf is `system:node:<node>`). Rules: the Node authorizer lets a node identity change its
own Node only (plugin/pkg/auth/authorizer/node/node_authorizer.go); NodeRestriction refuses a node
changing labels under kubernetes.io/k8s.io other than the kubelet's own set, and any
node-restriction.kubernetes.io label (plugin/pkg/admission/noderestriction/admission.go
getForbiddenLabels); label syntax per apimachinery validation.go; kubectl's own rules for
`--overwrite` (staging/src/k8s.io/kubectl/pkg/cmd/label/label.go). Messages as kubectl prints them.

Day-2 verbs read k8s.io/kubectl@v0.34.1 (pkg/cmd/drain/drain.go, pkg/drain/{drain,filters,cordon}.go,
pkg/cmd/util/helpers.go checkErr) and k8s.io/cli-runtime@v0.34.1 (printers/name.go, warningprinter.go);
pod/PDB rules are in workloads.py. Only the admin identity may use them here: what the Node
authorizer lets a kubelet list or patch beyond its own labels is not modelled (refused clearly).
Differences from kubectl, on purpose:
- kubectl evicts a node's pods concurrently and retries a 429 every 5s until --timeout; the fake
  evicts them one after another, in list order (namespace/name), each against the PDB as the
  evictions before it left it (a replacement pod Running elsewhere counts as healthy at once), and
  a pod the PDB refuses is refused for good: nothing in the fake changes while kubectl would wait,
  so the drain fails at once with the output a wait until --timeout prints (the retry lines, then
  the global-timeout error). A refusal that world time would lift (a Job pod finishing before the
  deadline) fails the same way: wait for it before draining. Without --timeout (0: forever) a
  refused eviction is a fake error, not a hang.
- kubectl prints warnings and per-message errors in Go map order (random); the fake sorts them.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fakes.k8s_snap import k8sd, workloads, world


class KubectlError(Exception):
    """stderr text (without its final newline), what was printed to stdout before, exit code."""

    def __init__(self, message: str, stdout: str = "", code: int = 1) -> None:
        super().__init__(message)
        self.stdout, self.code = stdout, code


def _identity(kubeconfig: str) -> str:
    try:
        text = Path(kubeconfig).read_text()
    except OSError:
        raise KubectlError(f"error: stat {kubeconfig}: no such file or directory") from None
    for line in text.splitlines():
        if line.startswith("user: "):
            return line[6:].strip()
    raise KubectlError(f"error: {kubeconfig}: no user in kubeconfig")


def _options(verb: str, args: list[str], valued: dict[str, str], bools: set[str]) -> tuple[list[str], dict[str, str]]:
    """pflag: `--name value`, `--name=value`, `-x value`, `--bool[=true|false]`; `valued` maps short
    and long spellings to one key."""
    positional: list[str] = []
    flags: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and a != "-":
            name, eq, value = a.partition("=")
            if name in bools:
                flags[name] = value if eq else "true"
                if flags[name] not in ("true", "false"):
                    raise KubectlError(f'error: invalid argument "{value}" for "{name}" flag: strconv.ParseBool: '
                                       f'parsing "{value}": invalid syntax')
            elif name in valued:
                if not eq:
                    i += 1
                    if i >= len(args):
                        raise KubectlError(f"error: flag needs an argument: {name}\nSee 'kubectl {verb} --help' "
                                           "for usage.")
                    value = args[i]
                flags[valued[name]] = value
            else:
                raise KubectlError(f"error: unknown flag: {name}\nSee 'kubectl {verb} --help' for usage.")
        else:
            positional.append(a)
        i += 1
    return positional, flags


def _seconds(text: str, flag: str) -> float:
    """Go time.ParseDuration for h/m/s/ms values; a bare 0 is allowed."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    if text == "0":
        return 0.0
    total, rest = 0.0, text
    while rest:
        number = ""
        while rest and (rest[0].isdigit() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        unit = "ms" if rest.startswith("ms") else rest[:1]
        if not number or unit not in units:
            why = f'missing unit in duration "{text}"' if number and not rest else f'invalid duration "{text}"'
            raise KubectlError(f'error: invalid argument "{text}" for "{flag}" flag: time: {why}')
        total, rest = total + float(number) * units[unit], rest[len(unit):]
    return total


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for whole seconds (`30s`, `5m0s`, `1h0m0s`)."""
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds:g}s"
    h, rem = divmod(whole, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h{m}m{sec}s"
    if m:
        return f"{m}m{sec}s"
    return f"{sec}s"


def _not_found(node: str) -> KubectlError:
    return KubectlError(f'Error from server (NotFound): nodes "{node}" not found')


def _aggregate(errors: list[str]) -> str:
    """apimachinery util/errors aggregate.Error(): one message as is, more as `[a, b]` (deduplicated)."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# ------------------------------------------------------------------------------------ label


def label(who: str, args: list[str]) -> tuple[str, str]:
    # imported here: components.settings loads pydantic (a quarter second per call of the other verbs)
    from components.settings import k8s_syntax

    overwrite = "--overwrite" in args
    args = [a for a in args if a != "--overwrite"]
    if len(args) < 2 or args[0] != "node":
        raise KubectlError(f"error: the fake kubectl models `label node` only, got {['label', *args]}")
    node_name, specs = args[1], args[2:]
    labels: dict[str, str] = {}
    # staging/src/k8s.io/kubectl/pkg/cmd/label/label.go parseLabels: `key-` removes a label
    # (absent: no error, the object is just not modified).
    remove = [spec[:-1] for spec in specs if spec.endswith("-") and "=" not in spec]
    specs = [spec for spec in specs if not (spec.endswith("-") and "=" not in spec)]
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
            raise _not_found(node_name)
        node = state["cluster"]["nodes"][node_name]
        if who.startswith("system:node:"):
            me = who.removeprefix("system:node:")
            if me != node_name:
                raise KubectlError(f'Error from server (Forbidden): nodes "{node_name}" is forbidden: User "{who}" '
                                   f'cannot patch resource "nodes" in API group "" at the cluster scope: node '
                                   f"'{me}' cannot modify node '{node_name}'")
            changed = sorted({k for k, v in labels.items() if node["labels"].get(k) != v}
                             | {k for k in remove if k in node["labels"]})
            forbidden = [k for k in changed if not k8s_syntax.kubelet_may_set(k)]
            if forbidden:
                raise KubectlError(f'Error from server (Forbidden): nodes "{node_name}" is forbidden: is not allowed '
                                   f"to modify labels: {', '.join(forbidden)}")
        if not overwrite:
            for k, v in labels.items():
                if k in node["labels"] and node["labels"][k] != v:
                    raise KubectlError(f"error: '{k}' already has a value ({node['labels'][k]}), and --overwrite "
                                       "is false")
        before = dict(node["labels"])
        node["labels"].update(labels)
        for key in remove:
            node["labels"].pop(key, None)
        world.record(state, os.environ["FAKE_INSTANCE"], f"kubectl label node {node_name} as {who}")
    # label.go: "labeled" when the object changed, "not labeled" when nothing did.
    return f"node/{node_name} {'labeled' if node['labels'] != before else 'not labeled'}", ""


# -------------------------------------------------------------------------------------- get


def _node_object(state: dict[str, Any], name: str) -> dict[str, Any]:
    node = state["cluster"]["nodes"][name]
    if workloads.node_ready(state, name):
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"}
    elif not workloads.kubelet_posting(state, name):  # node lifecycle controller: kubelet silent
        ready = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                 "message": "Kubelet stopped posting node status."}
    else:
        ready = {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                 "message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                            "message:Network plugin returns error: cni plugin not initialized"}
    spec: dict[str, Any] = {}
    if node.get("unschedulable"):
        spec = {"unschedulable": True,
                "taints": [{"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable"}]}
    status: dict[str, Any] = {"conditions": [ready], "nodeInfo": {"kubeletVersion": node["version"]}}
    if node.get("gpus"):
        status["capacity"] = status["allocatable"] = {workloads.GPU: str(node["gpus"])}
    meta = {"name": name, "labels": dict(node["labels"]),
            "annotations": {"k8sd.io/version": json.dumps({"revision": node.get("revision", ""),
                                                           "kubernetes-version": node["version"].lstrip("v")})}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def _list(items: list[dict[str, Any]]) -> str:
    """`kubectl get -o json` of a list: kind List, keys sorted (unstructured), 4-space indent."""
    return json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}},
                      indent=4, sort_keys=True)


def get(args: list[str]) -> tuple[str, str]:
    positional, flags = _options("get", args, {"-o": "output", "--output": "output", "-n": "namespace",
                                               "--namespace": "namespace", "--field-selector": "field-selector"},
                                 {"-A", "--all-namespaces"})
    if flags.get("output") != "json":
        raise KubectlError("error: the fake kubectl models `get ... -o json` only")
    if not positional:
        raise KubectlError("You must specify the type of resource to get. Use \"kubectl api-resources\" for a "
                           "complete list of supported resources.")
    kind, names = positional[0], positional[1:]
    state = world.read()
    cluster = state["cluster"]
    if kind in ("nodes", "node", "no"):
        if "field-selector" in flags:
            raise KubectlError("error: the fake kubectl models field selectors on pods only")
        for n in names:
            if not k8sd.node_registered(state, n):
                raise _not_found(n)
        if len(names) == 1:
            return json.dumps(_node_object(state, names[0]), indent=4, sort_keys=True), ""
        wanted = names or sorted(n for n in cluster["nodes"] if k8sd.node_registered(state, n))
        return _list([_node_object(state, n) for n in wanted]), ""
    if kind in ("pods", "pod", "po"):
        if names:
            raise KubectlError("error: the fake kubectl models listing pods only")
        selector = flags.get("field-selector")
        node = None
        if selector is not None:
            field, eq, node = selector.partition("=")
            if field != "spec.nodeName" or not eq:
                raise KubectlError(f"error: the fake kubectl models --field-selector spec.nodeName=<node> only, "
                                   f"got {selector}")
        every = flags.get("-A") == "true" or flags.get("--all-namespaces") == "true"
        namespace = flags.get("namespace", "default")
        pods = [workloads.pod_object(state, p) for _, p in sorted(cluster.get("pods", {}).items())
                if (every or p["namespace"] == namespace) and (node is None or p["node"] == node)]
        return _list(pods), ""
    if kind in ("upgrades", "upgrade", "upgrades.k8sd.io"):
        # k8s-snap-api api/v1alpha/upgrade_types.go, crds/k8sd.io_upgrades.yaml: cluster-scoped,
        # group k8sd.io version v1alpha, status {phase, strategy, upgradedNodes}; no spec.
        ups = sorted((cluster.get("upgrades") or {}).items())
        if names:
            missing = [n for n in names if n not in dict(ups)]
            if missing:
                raise KubectlError(f'Error from server (NotFound): upgrades.k8sd.io "{missing[0]}" not found')
            ups = [(n, u) for n, u in ups if n in names]
        items = [{"apiVersion": "k8sd.io/v1alpha", "kind": "Upgrade", "metadata": {"name": n},
                  "status": {"phase": u["phase"], "strategy": u["strategy"],
                             "upgradedNodes": list(u["upgradedNodes"])}} for n, u in ups]
        return _list(items), ""
    raise KubectlError(f"error: the fake kubectl models `get nodes|pods|upgrades` only, not {kind}")


# ---------------------------------------------------------------------------- cordon, drain


def _cordon(state: dict[str, Any], node_name: str, desired: bool) -> str:
    """pkg/drain/cordon.go UpdateIfRequired + cmd/drain RunCordonOrUncordon (name printer)."""
    if not k8sd.node_registered(state, node_name):
        raise _not_found(node_name)
    node = state["cluster"]["nodes"][node_name]
    word = "cordoned" if desired else "uncordoned"
    if bool(node.get("unschedulable")) == desired:
        return f"node/{node_name} already {word}"
    node["unschedulable"] = desired
    if not desired:
        workloads.schedule_pending(state)
    world.record(state, os.environ["FAKE_INSTANCE"], f"kubectl {'cordon' if desired else 'uncordon'} {node_name}")
    return f"node/{node_name} {word}"


def cordon(args: list[str], desired: bool) -> tuple[str, str]:
    verb = "cordon" if desired else "uncordon"
    positional, _ = _options(verb, args, {}, set())
    if len(positional) != 1:
        raise KubectlError("error: the fake kubectl models one node name per cordon/uncordon")
    with world.locked() as state:
        return _cordon(state, positional[0], desired), ""


_DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
_DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
_LOCAL_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
_LOCAL_WARNING = "deleting Pods with local storage"
_UNMANAGED_FATAL = "cannot delete Pods that declare no controller (use --force to override)"
_UNMANAGED_WARNING = "deleting Pods that declare no controller"


def _filter(state: dict[str, Any], pod: dict[str, Any], flags: dict[str, bool]) -> tuple[bool, str, str]:
    """pkg/drain/filters.go makeFilters, in order, stopping at the first status that does not delete:
    (delete, reason Okay|Warning|Error, message)."""
    terminal = workloads.phase(state, pod) in ("Succeeded", "Failed")
    owner = pod["owner"]

    def daemonset() -> tuple[bool, str, str]:
        if owner is None or owner["kind"] != "DaemonSet" or terminal:
            return True, "Okay", ""
        if not flags["ignore-daemonsets"]:
            return False, "Error", _DAEMONSET_FATAL
        return False, "Warning", _DAEMONSET_WARNING

    def local_storage() -> tuple[bool, str, str]:
        if not pod["empty_dir"] or terminal:
            return True, "Okay", ""
        if not flags["delete-emptydir-data"]:
            return False, "Error", _LOCAL_FATAL
        return True, "Warning", _LOCAL_WARNING

    def unreplicated() -> tuple[bool, str, str]:
        if terminal or owner is not None:
            return True, "Okay", ""
        if flags["force"]:
            return True, "Warning", _UNMANAGED_WARNING
        return False, "Error", _UNMANAGED_FATAL

    status = (True, "Okay", "")
    for check in (daemonset, local_storage, unreplicated):
        status = check()
        if not status[0]:
            break
    return status


def _plan(state: dict[str, Any], node_name: str, flags: dict[str, bool]) -> tuple[list[str], list[str], list[str]]:
    """GetPodsForDeletion: (keys to delete, warnings, errors) for the pods now on the node."""
    warned: dict[str, list[str]] = {}
    failed: dict[str, list[str]] = {}
    keys: list[str] = []
    for pod in workloads.pods_on(state, node_name):
        delete, reason, message = _filter(state, pod, flags)
        where = f"{pod['namespace']}/{pod['name']}"
        if reason == "Warning":
            warned.setdefault(message, []).append(where)
        if reason == "Error":
            failed.setdefault(message, []).append(where)
        if delete:
            keys.append(where)
    warnings = [f"{m}: {', '.join(p)}" for m, p in sorted(warned.items())]
    errors = [f"cannot delete {m}: {', '.join(p)}" for m, p in sorted(failed.items())]
    return keys, warnings, errors


def drain(args: list[str]) -> tuple[str, str]:
    positional, raw = _options("drain", args, {"--timeout": "timeout", "--grace-period": "grace-period"},
                               {"--ignore-daemonsets", "--delete-emptydir-data", "--force", "--disable-eviction"})
    if len(positional) != 1:
        raise KubectlError("error: the fake kubectl models one node name per drain")
    node_name = positional[0]
    flags = {k: raw.get(f"--{k}") == "true" for k in ("ignore-daemonsets", "delete-emptydir-data", "force",
                                                        "disable-eviction")}
    timeout = _seconds(raw.get("timeout", "0s"), "--timeout")
    try:
        int(raw.get("grace-period", "-1"))
    except ValueError:
        raise KubectlError(f'error: invalid argument "{raw["grace-period"]}" for "--grace-period" flag: '
                           f'strconv.ParseInt: parsing "{raw["grace-period"]}": invalid syntax') from None
    out: list[str] = []
    err: list[str] = []

    def fail(errors: list[str], pending: list[str] | None = None) -> KubectlError:
        agg = _aggregate(errors)
        if pending:
            err.append(f'There are pending pods in node "{node_name}" when an error occurred: {agg}')
            err.extend(f"pod/{p.split('/', 1)[1]}" for p in pending)
        err.append(f'error: unable to drain node "{node_name}" due to error: {agg}, continuing command...')
        err.append("There are pending nodes to be drained:")
        err.append(f" {node_name}")
        err.extend(dict.fromkeys(errors))  # checkErr: an aggregate prints one message a line
        return KubectlError("\n".join(err), "\n".join(out))

    with world.locked() as state:
        out.append(_cordon(state, node_name, True))
        world.record(state, os.environ["FAKE_INSTANCE"], f"kubectl drain {node_name}")
        keys, warnings, errors = _plan(state, node_name, flags)
        if errors:
            raise fail(errors)
        if warnings:
            err.append(f"Warning: {'; '.join(warnings)}")
        if flags["disable-eviction"]:  # deletePods: DELETE each, no PDB; printed once gone
            for key in keys:
                workloads.delete_pod(state, key)
            out.extend(f"pod/{k.split('/', 1)[1]} deleted" for k in keys)
            out.append(f"node/{node_name} drained")
            return "\n".join(out), "\n".join(err)
        out.extend(f"evicting pod {k}" for k in keys)
        refused: dict[str, tuple[int, str]] = {}
        for key in keys:
            try:
                workloads.evict(state, key)
            except workloads.EvictionRefused as exc:
                refused[key] = (exc.code, str(exc))
        out.extend(f"pod/{k.split('/', 1)[1]} evicted" for k in keys if k not in refused)
        if not refused:
            out.append(f"node/{node_name} drained")
            return "\n".join(out), "\n".join(err)
        retried = [k for k, (code, _) in refused.items() if code == 429]
        if retried and timeout == 0:
            raise KubectlError("fake kubectl: an eviction refused by a PodDisruptionBudget with no --timeout "
                               "would be retried forever; give --timeout", "\n".join(out))
        rounds = max(1, math.ceil(timeout / 5))  # a 429, 5s sleep, again, until the deadline
        failures: list[str] = []
        for key, (code, message) in refused.items():
            ns, name = key.split("/", 1)
            if code != 429:
                failures.append(f'error when evicting pods/"{name}" -n "{ns}": {message}')
                continue
            err.extend([f'error when evicting pods/"{name}" -n "{ns}" (will retry after 5s): {message}'] * rounds)
            out.extend([f"evicting pod {key}"] * rounds)
            failures.append(f'error when evicting pods/"{name}" -n "{ns}": global timeout reached: '
                            f"{go_duration(timeout)}")
        pending, _, _ = _plan(state, node_name, flags)
        raise fail(failures, pending)


# ------------------------------------------------------------------------------------- main


def run(args: Sequence[str]) -> tuple[str, str]:
    """(stdout, stderr) of a successful command; KubectlError otherwise."""
    args = list(args)
    kubeconfig = None
    for i, a in enumerate(args):
        if a == "--kubeconfig" and i + 1 < len(args):
            kubeconfig = args[i + 1]
            del args[i:i + 2]
            break
        if a.startswith("--kubeconfig="):
            kubeconfig = a.split("=", 1)[1]
            del args[i]
            break
    if kubeconfig is None:
        raise KubectlError("error: no kubeconfig (the fake has no in-cluster config)")
    who = _identity(kubeconfig)
    if not args:
        raise KubectlError("error: the fake kubectl needs a command")
    verb, rest = args[0], args[1:]
    if verb == "label":
        return label(who, rest)
    if verb not in ("get", "cordon", "uncordon", "drain"):
        raise KubectlError(f"error: the fake kubectl models label, get, cordon, uncordon and drain only, got "
                           f"{args}")
    if who != "admin":
        raise KubectlError(f"error: the fake kubectl models `{verb}` for the cluster admin (admin.conf) only, not "
                           f"for {who}")
    if verb == "get":
        return get(rest)
    if verb == "drain":
        return drain(rest)
    return cordon(rest, verb == "cordon")


def main(argv: Sequence[str]) -> int:
    import sys

    try:
        out, err = run(argv)
    except KubectlError as exc:
        if exc.stdout:
            print(exc.stdout)
        print(exc, file=sys.stderr)
        return exc.code
    if out:
        print(out)
    if err:
        print(err, file=sys.stderr)
    return 0
