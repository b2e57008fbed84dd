"""kind's cluster config (`kind.x-k8s.io/v1alpha4`, kind `Cluster`) as a strict pydantic model.

Written from sigs.k8s.io/kind pkg/apis/config/v1alpha4/types.go and yaml.go at v0.30.0
(unchanged in fields through HEAD fed2688, Aug 2026), plus the checks of
pkg/internal/apis/config/validate.go that kind runs before creating anything. kind decodes
strictly (yaml KnownFields), so unknown keys are errors here too.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

API_VERSION = "kind.x-k8s.io/v1alpha4"
KIND = "Cluster"

_NAME = re.compile(r"^[a-z0-9.-]+$")  # validate.go validNameRE


class _Strict(BaseModel):
    # Aliases only (kind reads camelCase) and no coercion: go-yaml refuses `"80"` for an int too.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class PatchJSON6902(_Strict):
    group: str
    version: str
    kind: str
    patch: str


class Mount(_Strict):
    container_path: str = Field(default="", alias="containerPath")
    host_path: str = Field(default="", alias="hostPath")
    read_only: bool = Field(default=False, alias="readOnly")
    selinux_relabel: bool = Field(default=False, alias="selinuxRelabel")
    propagation: Literal["", "None", "HostToContainer", "Bidirectional"] = ""


class PortMapping(_Strict):
    container_port: int = Field(default=0, ge=-1, le=65535, alias="containerPort")
    host_port: int = Field(default=0, ge=-1, le=65535, alias="hostPort")
    listen_address: str = Field(default="", alias="listenAddress")
    protocol: Literal["", "TCP", "UDP", "SCTP"] = ""

    @field_validator("protocol", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:  # yaml.go upper-cases the protocol before checking it
        return v.upper() if isinstance(v, str) else v


def _kubeadm_patch(text: str) -> str:
    """kind applies these as YAML merge patches matched on their `kind`: each must be a mapping with one."""
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or not doc.get("kind"):
        raise ValueError("a kubeadmConfigPatches entry must be a YAML mapping with a `kind`")
    return text


class Node(_Strict):
    role: Literal["control-plane", "worker"] = "control-plane"
    image: str = Field(min_length=1)  # defaulted by kind when empty; we always pin it
    labels: dict[str, str] = Field(default_factory=dict)
    extra_mounts: list[Mount] = Field(default_factory=list, alias="extraMounts")
    extra_port_mappings: list[PortMapping] = Field(default_factory=list, alias="extraPortMappings")
    kubeadm_config_patches: list[str] = Field(default_factory=list, alias="kubeadmConfigPatches")
    kubeadm_config_patches_json6902: list[PatchJSON6902] = Field(
        default_factory=list, alias="kubeadmConfigPatchesJSON6902"
    )

    @field_validator("kubeadm_config_patches")
    @classmethod
    def _patches(cls, v: list[str]) -> list[str]:
        return [_kubeadm_patch(p) for p in v]


class Networking(_Strict):
    ip_family: Literal["ipv4", "ipv6", "dual"] = Field(default="ipv4", alias="ipFamily")
    api_server_port: int = Field(default=0, ge=-1, le=65535, alias="apiServerPort")
    api_server_address: str = Field(default="", alias="apiServerAddress")
    pod_subnet: str = Field(default="", alias="podSubnet")
    service_subnet: str = Field(default="", alias="serviceSubnet")
    disable_default_cni: bool = Field(default=False, alias="disableDefaultCNI")
    kube_proxy_mode: Literal["iptables", "ipvs", "nftables", "none"] = Field(default="iptables", alias="kubeProxyMode")
    dns_search: list[str] | None = Field(default=None, alias="dnsSearch")

    @field_validator("pod_subnet", "service_subnet")
    @classmethod
    def _cidrs(cls, v: str) -> str:
        for part in filter(None, v.split(",")):
            ipaddress.ip_network(part)  # raises ValueError: kind's validateSubnets parses each CIDR
        return v

    @model_validator(mode="after")
    def _families(self) -> Networking:
        for field in ("pod_subnet", "service_subnet"):
            nets = [ipaddress.ip_network(p) for p in getattr(self, field).split(",") if p]
            if self.ip_family != "dual" and len(nets) > 1:
                raise ValueError(f"{field}: only one CIDR allowed for single-stack networking")
            want = {"ipv4": 4, "ipv6": 6}.get(self.ip_family)
            if want and nets and nets[0].version != want:
                raise ValueError(f"{field}: expected an IPv{want} CIDR for ipFamily {self.ip_family}")
        return self


class Cluster(_Strict):
    kind: Literal["Cluster"]
    api_version: Literal["kind.x-k8s.io/v1alpha4"] = Field(alias="apiVersion")
    name: str = Field(default="kind", pattern=_NAME.pattern)
    nodes: list[Node] = Field(default_factory=list)
    networking: Networking = Field(default_factory=Networking)
    feature_gates: dict[str, bool] = Field(default_factory=dict, alias="featureGates")
    runtime_config: dict[str, str] = Field(default_factory=dict, alias="runtimeConfig")
    kubeadm_config_patches: list[str] = Field(default_factory=list, alias="kubeadmConfigPatches")
    kubeadm_config_patches_json6902: list[PatchJSON6902] = Field(
        default_factory=list, alias="kubeadmConfigPatchesJSON6902"
    )
    containerd_config_patches: list[str] = Field(default_factory=list, alias="containerdConfigPatches")
    containerd_config_patches_json6902: list[str] = Field(default_factory=list, alias="containerdConfigPatchesJSON6902")

    @field_validator("kubeadm_config_patches")
    @classmethod
    def _patches(cls, v: list[str]) -> list[str]:
        return [_kubeadm_patch(p) for p in v]

    @field_validator("containerd_config_patches")
    @classmethod
    def _toml(cls, v: list[str]) -> list[str]:
        for patch in v:
            tomllib.loads(patch)  # kind converts each TOML merge patch to JSON; bad TOML fails there
        return v

    @model_validator(mode="after")
    def _control_plane(self) -> Cluster:
        if self.nodes and not any(n.role == "control-plane" for n in self.nodes):
            raise ValueError("must have at least one control-plane node")
        return self


def validation_errors(doc: Any) -> list[str]:
    """Every reason kind would refuse `doc` (a parsed config), as `path: message`; empty when valid."""
    try:
        Cluster.model_validate(doc)
    except ValidationError as exc:
        return [f"{'.'.join(str(p) for p in e['loc']) or '$'}: {e['msg']}" for e in exc.errors()]
    return []
