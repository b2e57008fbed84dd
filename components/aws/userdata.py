"""Cloud-init user-data for each node role (pure functions: plain values in, cloud-config text out).

Every node gets the same script (`scripts/ck8s-node.sh`, installed as /usr/local/sbin/ck8s-gpu-node
and run once by runcmd), an env file saying who it is, and the non-secret Canonical Kubernetes
config for its role. Nothing secret is in user-data: control planes read the CA material and the
CAPI join auth token from Secrets Manager at boot; workers read no secret and get their join token
through SSM (aws/mint.py). See docs/adr/0011.
"""

from __future__ import annotations

import base64
import gzip
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from ..facts.cluster import AddonFacts
from ..facts.efa import HUGEPAGES_2MI, efa_enabled
from ..facts.feature_gates import COMPONENTS, Component, required
from ..facts.nodes import pool_node_labels
from ..settings.model import MirrorUpstream, NodePoolSettings, Settings, Taint
from ..settings.offline_rules import ecr_mirror
from ..tables import pins
from ..tables.instance_types import arch_for_instance_type
from ..tables.labels import POOL_TAG
from .inventory import api_lb_name

NodeRole = Literal["bootstrap", "control-plane", "worker"]

SCRIPT_SOURCE = Path(__file__).resolve().parent / "scripts" / "ck8s-node.sh"
SCRIPT_PATH = "/usr/local/sbin/ck8s-gpu-node"
CONFIG_DIR = "/etc/ck8s-gpu"
# EC2 refuses user-data above 16 KiB (before base64): fail at preview, not at RunInstances.
USER_DATA_LIMIT = 16384
# Label every node of a pool with its pool name (same key as the AWS tag).
POOL_LABEL = POOL_TAG


@dataclass(frozen=True)
class ClusterBoot:
    """What every node of the cluster is told."""

    cluster_name: str
    region: str
    snap_channel: str
    hold_snap_refresh: bool
    auth_secret_id: str  # control planes only: the worker role cannot read it
    # The API load balancer's AWS name. Control planes look its DNS name up at boot (an extra SAN of
    # every API server certificate): the name is known at plan time, the DNS name only once the NLB
    # is active, 2-3 minutes later, and no node should wait for that in the graph (ADR 0019).
    api_lb_name: str
    # (component, `--feature-gates` value): each component only the gates it reads (components/facts/feature_gates.py).
    feature_gates: tuple[tuple[Component, str], ...] = ()
    runtime_config: str | None = None  # kube-apiserver --runtime-config (DRA before 1.34, DeviceTaintRule)
    cloud_provider_external: bool = True
    # (bootstrap-config feature key, enabled), every feature named: see bootstrap_config().
    features: tuple[tuple[str, bool], ...] = ()
    # The SSM document workers run on a control plane to get a worker join token (aws/mint.py).
    mint_document: str = ""
    # The cluster's k8s snap (settings.kubernetes.snap, ADR 0039): every node installs exactly the
    # revision of its CPU architecture and refuses to join when it is not that version. Unset: the
    # channel's current revision (a node launched later may run another patch).
    snap_version: str = ""
    snap_revisions: tuple[tuple[str, int], ...] = ()
    control_plane_arch: str = "amd64"
    # Boot media and image supply (docs/adr/0043): the snap from the node image's files, the
    # image's container images side-loaded, the registry mirror for the upstream hosts (ECR: with
    # containerd-level credentials renewed on the node), nothing outside the VPC but AWS.
    snap_from_image: bool = False
    images_preloaded: bool = False
    mirror: str = ""
    mirror_upstreams: tuple[str, ...] = ()
    mirror_ecr_region: str = ""  # set: the mirror is an ECR registry in this region
    offline: bool = False
    # gpuStack.toolkit host (docs/adr/0046): GPU workers hook the image's NVIDIA Container Toolkit
    # into k8s-snap's containerd before it first starts, as the operator's toolkit would configure
    # it: "cdi" (the track's containerd does CDI: enable_cdi, nvidia a runtime class) or
    # "default-runtime" (no CDI: nvidia the default runtime). "": the operator installs it.
    host_toolkit: str = ""

    def snap_revision(self, arch: str) -> int | None:
        return dict(self.snap_revisions).get(arch)


@dataclass(frozen=True)
class ControlPlaneBoot:
    pki_secret_id: str  # the CA certificates and keys: appended to bootstrap.yaml on the node
    pod_cidr: str
    service_cidr: str
    # More than one control plane: the first one joins running peers instead of bootstrapping
    # (a replaced first control plane must never start a second cluster).
    peer_join: bool


@dataclass(frozen=True)
class WorkerBoot:
    pool: str
    labels: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    taints: tuple[str, ...] = ()  # kubelet --register-with-taints items: key=value:Effect
    # 2 MiB huge pages reserved before the kubelet starts (it reads them once, at start, into the
    # node's hugepages-2Mi capacity): EFA's libfabric provider maps its buffers from them.
    hugepages_2mi: int = 0
    arch: str = "amd64"  # the pool's CPU architecture: which pinned snap revision it installs
    # The pool boots its own image (nodePools[].ami): only then can it carry the snap and the
    # images; a pool on Canonical's AMI (a GB200 pool) installs the pin from the store and pulls.
    image_media: bool = True


# --------------------------------------------------------------------------------------------
# settings -> boot inputs


def component_gates(settings: Settings) -> tuple[tuple[Component, str], ...]:
    """Each component's `--feature-gates` value from the gate table; components with none left out."""
    gates = required(settings)
    return tuple((c, flag) for c in COMPONENTS if (flag := gates.flag(c)))


def runtime_config(settings: Settings) -> str | None:
    """kube-apiserver `--runtime-config` from the gate table: the API versions the needed gates need
    served (DRA's beta versions before 1.34, v1alpha3 for DRADeviceTaints on 1.33-1.34); None: none."""
    return required(settings).runtime_config_flag() or None


# settings.kubernetes.features field -> k8s-snap bootstrap config key under `cluster-config`
# (k8s-snap src/k8s/pkg/k8sd/types/cluster_config.go; docs reference/bootstrap-config-reference).
FEATURE_KEYS: dict[str, str] = {
    "network": "network",
    "dns": "dns",
    "gateway": "gateway",
    "ingress": "ingress",
    "load_balancer": "load-balancer",
    "local_storage": "local-storage",
    "metrics_server": "metrics-server",
}


def features(settings: Settings) -> tuple[tuple[str, bool], ...]:
    f = settings.kubernetes.features
    return tuple((key, bool(getattr(f, field))) for field, key in FEATURE_KEYS.items())


def cluster_boot(settings: Settings, auth_secret_id: str, mint_document: str, addons: AddonFacts) -> ClusterBoot:
    if settings.region is None:
        raise ValueError("settings.region is required on aws")
    return ClusterBoot(
        cluster_name=settings.cluster_name,
        region=settings.region,
        snap_channel=pins.track(settings.kubernetes.track).channel,
        hold_snap_refresh=settings.kubernetes.hold_snap_refresh,
        auth_secret_id=auth_secret_id,
        api_lb_name=api_lb_name(settings.cluster_name),
        feature_gates=component_gates(settings),
        runtime_config=runtime_config(settings),
        cloud_provider_external=addons.cloud_controller_manager,
        features=features(settings),
        mint_document=mint_document,
        **snap_pin(settings),
        **image_supply(settings),
        host_toolkit=host_toolkit(settings),
    )


def host_toolkit(settings: Settings) -> str:
    """ClusterBoot.host_toolkit. NVIDIA/gpu-operator v26.7.0 transformToolkitCtrForCDI: with CDI the
    toolkit does not make nvidia the default runtime; without, nvidia-ctk-installer's default
    (set-as-default true, NVIDIA/nvidia-container-toolkit v1.20.0 cmd/nvidia-ctk-installer/
    container/runtime/runtime.go) makes it the default."""
    if settings.gpu_stack.toolkit != "host":
        return ""
    return "cdi" if pins.track(settings.kubernetes.track).cdi else "default-runtime"


def image_supply(settings: Settings) -> dict[str, Any]:
    """ClusterBoot's boot-media fields from kubernetes.snap.fromImage, images and offline."""
    pin, im = settings.kubernetes.snap, settings.images
    ecr = ecr_mirror(im.mirror)
    return {
        "snap_from_image": bool(pin and pin.from_image),
        "images_preloaded": im.preloaded,
        "mirror": im.mirror or "",
        "mirror_upstreams": get_args(MirrorUpstream) if im.mirror else (),
        "mirror_ecr_region": ecr.region if ecr else "",
        "offline": settings.offline,
    }


def snap_pin(settings: Settings) -> dict[str, Any]:
    """ClusterBoot's snap fields from settings.kubernetes.snap (rules.py checks it covers every
    architecture the nodes have)."""
    pin = settings.kubernetes.snap
    return {
        "snap_version": pin.version if pin else "",
        "snap_revisions": tuple(sorted(pin.revisions.items())) if pin else (),
        "control_plane_arch": arch_for_instance_type(settings.control_plane.instance_type),
    }


def control_plane_boot(settings: Settings, pki_secret_id: str) -> ControlPlaneBoot:
    return ControlPlaneBoot(
        pki_secret_id=pki_secret_id,
        pod_cidr=settings.kubernetes.pod_cidr,
        service_cidr=settings.kubernetes.service_cidr,
        peer_join=settings.control_plane.count > 1,
    )


def taint_arg(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def worker_boot(settings: Settings, pool: NodePoolSettings) -> WorkerBoot:
    return WorkerBoot(
        pool=pool.name,
        labels=tuple(sorted(pool_node_labels(settings, pool).items())),
        taints=tuple(taint_arg(t) for t in pool.taints),
        hugepages_2mi=HUGEPAGES_2MI if efa_enabled(pool) else 0,
        arch=arch_for_instance_type(pool.instance_type),
        image_media=pool.ami is not None,
    )


# --------------------------------------------------------------------------------------------
# Canonical Kubernetes config files (non-secret parts)


def _extra_node_args(c: ClusterBoot, control_plane: bool) -> dict[str, dict[str, str]]:
    """Each component of this node its own gates (bootstrap and join config keys
    `extra-node-<component>-args`: k8s-snap docs/canonicalk8s/_parts/{bootstrap,control_plane_join,
    worker_join}_config.md); k8sd applies extra-node-* to the node being bootstrapped or joined only,
    so every role's file repeats them."""
    args: dict[str, dict[str, str]] = {}
    for component, flag in c.feature_gates:
        if control_plane or component == "kubelet":
            args[component] = {"--feature-gates": flag}
    if control_plane and c.runtime_config:
        args.setdefault("kube-apiserver", {})["--runtime-config"] = c.runtime_config
    # The order the files have always had: kubelet, then the control plane's.
    order = ("kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
    return {f"extra-node-{name}-args": args[name] for name in order if name in args}


def bootstrap_config(c: ClusterBoot, cp: ControlPlaneBoot) -> dict[str, Any]:
    """`k8s bootstrap --file` without the CA material (appended on the node from Secrets Manager)
    and without `extra-sans` (appended on the node once it has looked up the API NLB's DNS name).

    Every feature is named: with `--file`, k8sd turns each feature the file leaves unset OFF,
    network and DNS included (cluster_config_defaults.go), and without a CNI no node is Ready."""
    if not c.features:
        raise ValueError("bootstrap config needs every feature set explicitly (ClusterBoot.features)")
    cluster_config: dict[str, Any] = {key: {"enabled": on} for key, on in c.features}
    if c.cloud_provider_external:
        cluster_config["cloud-provider"] = "external"
    return {
        "cluster-config": cluster_config,
        "pod-cidr": cp.pod_cidr,
        "service-cidr": cp.service_cidr,
        **_extra_node_args(c, control_plane=True),
    }


def control_plane_join_config(c: ClusterBoot) -> dict[str, Any]:
    """`k8s join-cluster --file` for a control plane; the node appends `extra-sans` (see above)."""
    return _extra_node_args(c, control_plane=True)


def worker_join_config(c: ClusterBoot, w: WorkerBoot) -> dict[str, Any]:
    config = _extra_node_args(c, control_plane=False)
    if w.taints:
        kubelet = config.setdefault("extra-node-kubelet-args", {})
        kubelet["--register-with-taints"] = ",".join(w.taints)
    return dict(config)


# --------------------------------------------------------------------------------------------
# rendering


# libyaml's emitter when PyYAML has it: the pure-Python one spends most of a large plan on the
# embedded node script (same output; the golden files hold it to that).
_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """Multi-line strings as literal blocks, so scripts and certificates stay readable in diffs."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1 << 16)


_HEREDOC = re.compile(r"<<-?\s*'?(\w+)'?\s*$")  # `<<'EOF'` ending a line; not `<<<` (a here-string)
# A trailing comment: `#` after whitespace with no quote after it on the line (so never one inside
# a quoted string; `${#x}` and `$#` have no whitespace before the `#`).
_TRAILING_COMMENT = re.compile(r"\s+#\s[^'\"]*$")


def compact_script(lines: list[str]) -> list[str]:
    """Comment-only lines and trailing comments dropped and indentation removed (EC2's 16 KiB
    user-data limit), except inside here-documents, whose bodies (Python) are kept byte for byte.
    Shellcheck directives stay."""
    out: list[str] = []
    terminator = None
    for line in lines:
        if terminator is not None:
            out.append(line)
            if line == terminator:
                terminator = None
            continue
        code = line.lstrip()
        if code.startswith("#") and not code.startswith("# shellcheck"):
            continue
        code = _TRAILING_COMMENT.sub("", code)
        out.append(code)
        m = _HEREDOC.search(code)
        if m and "<<<" not in code:
            terminator = m.group(1)
    return out


def node_script() -> str:
    """The node script as embedded: compact_script of components/aws/scripts/ck8s-node.sh (the
    commented source), shebang kept."""
    lines = SCRIPT_SOURCE.read_text().splitlines()
    header = [lines[0], f"# ck8s-gpu node setup; commented source: components/aws/scripts/{SCRIPT_SOURCE.name}"]
    return "\n".join(header + compact_script(lines[1:])) + "\n"


def snap_env(c: ClusterBoot, arch: str) -> dict[str, str]:
    """The exact snap a node of `arch` installs (none when the stack pins none for it)."""
    revision = c.snap_revision(arch)
    if not c.snap_version or revision is None:
        return {}
    return {"CK8S_SNAP_REVISION": str(revision), "CK8S_SNAP_VERSION": c.snap_version}


def supply_env(c: ClusterBoot, image_media: bool = True) -> dict[str, str]:
    """Where the node takes its snap and images from (set only when not the defaults: the store,
    no side-loading, the public registries, online). `image_media` False: the node boots
    Canonical's AMI, which carries neither (settings.offline_rules refuses that offline)."""
    env = {"CK8S_SNAP_SOURCE": "image"} if c.snap_from_image and image_media else {}
    if c.images_preloaded and image_media:
        env["CK8S_IMAGES_PRELOADED"] = "1"
    if c.mirror:
        env.update(CK8S_REGISTRY_MIRROR=c.mirror, CK8S_MIRROR_UPSTREAMS=" ".join(c.mirror_upstreams))
        if c.mirror_ecr_region:
            env.update(CK8S_MIRROR_AUTH="ecr", CK8S_MIRROR_REGION=c.mirror_ecr_region)
    if c.offline:
        env["CK8S_OFFLINE"] = "1"
    return env


def node_env(role: NodeRole, c: ClusterBoot, arch: str | None = None, image_media: bool = True,
             **extra: str) -> str:
    values = {
        "CK8S_ROLE": role,
        "CK8S_CLUSTER": c.cluster_name,
        "CK8S_REGION": c.region,
        "CK8S_SNAP_CHANNEL": c.snap_channel,
        **snap_env(c, arch or c.control_plane_arch),
        **supply_env(c, image_media),
        "CK8S_HOLD_SNAP_REFRESH": "true" if c.hold_snap_refresh else "false",
        **({"CK8S_MINT_DOCUMENT": c.mint_document} if role == "worker"
           else {"CK8S_AUTH_SECRET_ID": c.auth_secret_id, "CK8S_API_LB_NAME": c.api_lb_name}),
        **extra,
    }
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())


def _file(path: str, content: str, permissions: str = "0600") -> dict[str, str]:
    return {"path": path, "owner": "root:root", "permissions": permissions, "content": content}


# The node script travels gzipped (cloud-init write_files `encoding: gz+b64`, cc_write_files.py):
# with the boot-media code (docs/adr/0043) the plain script no longer fits EC2's 16 KiB. mtime 0:
# the same script renders the same bytes. readable() shows it decoded (golden files, tests).
SCRIPT_ENCODING = "gz+b64"


def _script_file() -> dict[str, str]:
    packed = base64.b64encode(gzip.compress(node_script().encode(), 9, mtime=0)).decode()
    return {**_file(SCRIPT_PATH, packed, "0700"), "encoding": SCRIPT_ENCODING}


def decoded_files(text: str) -> dict[str, str]:
    """{path: content} of a rendered user-data's write_files, gz+b64 contents decoded."""
    out = {}
    for f in yaml.safe_load(text)["write_files"]:
        content = f["content"]
        if f.get("encoding") == SCRIPT_ENCODING:
            content = gzip.decompress(base64.b64decode(content)).decode()
        out[f["path"]] = content
    return out


def readable(text: str) -> str:
    """The user-data with every gz+b64 file shown as its text (`encoding` kept, so a reader sees
    what travels); for golden files and review, never for EC2."""
    header, _, _ = text.partition("write_files:")
    doc = yaml.safe_load(text)
    plain = decoded_files(text)
    for f in doc["write_files"]:
        f["content"] = plain[f["path"]]
    return header + dump_yaml(doc)


HUGEPAGES_SYSCTL = "/etc/sysctl.d/60-ck8s-gpu-hugepages.conf"


def cloud_config(role: NodeRole, c: ClusterBoot, configs: Mapping[str, dict[str, Any]], env: str,
                 hugepages_2mi: int = 0) -> str:
    sysctl = [_file(HUGEPAGES_SYSCTL, f"vm.nr_hugepages = {hugepages_2mi}\n", "0644")] if hugepages_2mi else []
    doc = {
        "write_files": [
            _file(f"{CONFIG_DIR}/node.env", env),
            # An empty config is an empty file, not `{}`: a control plane appends `extra-sans` to it.
            *(_file(f"{CONFIG_DIR}/{name}", dump_yaml(cfg) if cfg else "") for name, cfg in configs.items()),
            _script_file(),
            *sysctl,
        ],
        # systemd-sysctl ran before cloud-init wrote the file: apply it before the node joins.
        "runcmd": [*([["sysctl", "-p", HUGEPAGES_SYSCTL]] if hugepages_2mi else []), [SCRIPT_PATH]],
    }
    header = f"#cloud-config\n# ck8s-gpu {role} node of cluster {c.cluster_name} (components/aws/userdata.py)\n"
    text = header + dump_yaml(doc)
    if len(text.encode()) > USER_DATA_LIMIT:
        raise ValueError(f"{role} user-data is {len(text.encode())} bytes; EC2 accepts {USER_DATA_LIMIT}")
    return text


def render_bootstrap_control_plane(c: ClusterBoot, cp: ControlPlaneBoot) -> str:
    configs = {"bootstrap.yaml": bootstrap_config(c, cp)}
    if cp.peer_join:
        configs["join.yaml"] = control_plane_join_config(c)
    env = node_env(
        "bootstrap", c, CK8S_PKI_SECRET_ID=cp.pki_secret_id, CK8S_PEER_JOIN="true" if cp.peer_join else "false"
    )
    return cloud_config("bootstrap", c, configs, env)


def render_joining_control_plane(c: ClusterBoot) -> str:
    return cloud_config("control-plane", c, {"join.yaml": control_plane_join_config(c)}, node_env("control-plane", c))


def render_gpu_worker(c: ClusterBoot, w: WorkerBoot) -> str:
    labels = " ".join(f"{k}={v}" for k, v in w.labels)
    toolkit = {"CK8S_HOST_TOOLKIT": c.host_toolkit} if c.host_toolkit else {}
    env = node_env("worker", c, w.arch, w.image_media, CK8S_POOL=w.pool, CK8S_NODE_LABELS=labels, **toolkit)
    return cloud_config("worker", c, {"join.yaml": worker_join_config(c, w)}, env, w.hugepages_2mi)
