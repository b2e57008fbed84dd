"""Run the real Pulumi program under the SDK's mock engine and record the resource graph.

No Pulumi CLI, no provider plugins, no network, no credentials: this is what `ck8s-gpu plan`
and the graph tests use. The recording monitor keeps what the SDK's own mock monitor drops
(parent, dependencies, protect flags, secret-ness of inputs).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import rpc
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from ..tables import tokens

# The wire's signatures, from the SDK that writes them (pulumi/runtime/rpc.py).
SECRET_SIG = rpc._special_secret_sig
RESOURCE_SIG = rpc._special_resource_sig
OUTPUT_SIG = rpc._special_output_value_sig
SPECIAL = rpc._special_sig_key
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
MASK = "[secret]"


@dataclass
class Recorded:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]  # secrets replaced by MASK
    secret_paths: list[str]
    dependencies: list[str]
    provider: str = ""
    protect: bool = False
    retain_on_delete: bool = False
    timeouts: dict[str, str] = field(default_factory=dict)
    ignore_changes: list[str] = field(default_factory=list)
    raw_inputs: dict[str, Any] = field(default_factory=dict, repr=False)  # unmasked, in-process only
    aliases: list[str] = field(default_factory=list)  # URNs this resource was known by (moved, renamed)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "raw_inputs"}
        return out


def _unwrap(value: Any, path: str, secrets: list[str], mask: bool) -> Any:
    """Turn a wire struct into plain JSON, masking (or unwrapping) secrets and naming references."""
    if isinstance(value, dict):
        sig = value.get(SPECIAL)
        if sig == SECRET_SIG:
            secrets.append(path or "$")
            return MASK if mask else _unwrap(value.get("value"), path, [], mask)
        if sig == RESOURCE_SIG:
            return {"$ref": value.get("urn", "")}
        if sig == OUTPUT_SIG:
            if value.get("secret"):
                secrets.append(path or "$")
                if mask:
                    return MASK
            return _unwrap(value.get("value"), path, secrets, mask) if "value" in value else None
        return {k: _unwrap(v, f"{path}.{k}" if path else k, secrets, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v, f"{path}[{i}]", secrets, mask) for i, v in enumerate(value)]
    if value == UNKNOWN:
        return "<computed>"
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire has only doubles; 2 reads better than 2.0 in a plan
    return value


def _mark_secret_outputs(response: Any, names: Any) -> None:
    """What the real engine does for `additional_secret_outputs`: those outputs come back secret."""
    for key in names:
        if key not in response.object.fields:
            continue
        plain = struct_pb2.Value()
        plain.CopyFrom(response.object.fields[key])
        wrapped = response.object.fields[key].struct_value
        wrapped.Clear()
        wrapped.fields[SPECIAL].string_value = SECRET_SIG
        wrapped.fields["value"].CopyFrom(plain)


class RecordingMonitor(pmocks.MockMonitor):
    def __init__(self, mocks: pmocks.Mocks) -> None:
        super().__init__(mocks)
        self.recorded: list[Recorded] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        _mark_secret_outputs(response, request.additionalSecretOutputs)
        if request.type == tokens.PULUMI_STACK:
            return response
        wire = json_format.MessageToDict(request.object)
        secrets: list[str] = []
        masked = _unwrap(wire, "", secrets, mask=True)
        raw = _unwrap(wire, "", [], mask=False)
        if request.type.startswith("pulumi-python:dynamic"):
            masked.pop("__provider", None)  # a pickled provider: noise in a plan
        deps = set(request.dependencies)
        for prop in request.propertyDependencies.values():
            deps.update(prop.urns)
        timeouts = json_format.MessageToDict(request.customTimeouts) if request.HasField("customTimeouts") else {}
        self.recorded.append(
            Recorded(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=request.custom,
                inputs=masked,
                secret_paths=sorted(set(secrets)),
                dependencies=sorted(deps),
                provider=request.provider.split("::")[-1] if request.provider else "",
                protect=request.protect,
                retain_on_delete=request.retainOnDelete,
                timeouts=timeouts,
                ignore_changes=list(request.ignoreChanges),
                raw_inputs=raw,
                aliases=_alias_urns(request),
            )
        )
        return response


def _alias_urns(request: Any) -> list[str]:
    """Aliases given as URNs, whichever way the SDK sent them (alias specs or the older URN list)."""
    specs = [a.urn for a in request.aliases if a.WhichOneof("alias") == "urn"]
    return [*specs, *request.aliasURNs]


def _fake_id(typ: str, name: str) -> str:
    return hashlib.sha256(f"{typ}/{name}".encode()).hexdigest()[:17]


# Plausible outputs for the provider types the program reads back (everything else echoes inputs).
def _outputs(typ: str, name: str, inputs: dict[str, Any], region: str) -> dict[str, Any]:
    rid = _fake_id(typ, name)
    out: dict[str, Any] = {"arn": f"arn:aws:mock:{region}:123456789012:{typ.split(':')[-1].lower()}/{name}"}
    if typ == tokens.AWS_LB_LOAD_BALANCER:
        out["dnsName"] = f"{name}-{rid[:8]}.elb.{region}.amazonaws.com"
    if typ == tokens.AWS_EC2_INSTANCE:
        out.update(privateIp="10.0.0.10", privateDns=f"ip-10-0-0-10.{region}.compute.internal")
    if typ.startswith("tls:"):
        # Real PEM headers, so a key that leaks into a plain input looks like one to the policies.
        def pem(kind: str) -> str:
            return f"-----BEGIN {kind}-----\n{rid}\n-----END {kind}-----\n"  # body: the fake id alone

        out.update(privateKeyPem=pem("PRIVATE KEY"), publicKeyPem=pem("PUBLIC KEY"), certPem=pem("CERTIFICATE"),
                   privateKeyOpenssh=pem("OPENSSH PRIVATE KEY"))
    if typ == tokens.RANDOM_RANDOM_PASSWORD:
        out["result"] = f"mock-{rid}"
    return out


class PlanMocks(pmocks.Mocks):
    def __init__(self, region: str) -> None:
        self.region = region or "eu-west-1"

    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        state.update(_outputs(args.typ, args.name, args.inputs, self.region))
        return f"{args.name}-{_fake_id(args.typ, args.name)[:8]}", state

    def call(self, args: pmocks.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        token = args.token
        if token == tokens.AWS_INDEX_GET_AVAILABILITY_ZONES:
            names = [f"{self.region}{z}" for z in "abc"]
            return {"names": names, "zoneIds": [f"{self.region[:3]}-az{i}" for i in (1, 2, 3)]}
        if token == tokens.AWS_SSM_GET_PARAMETER:
            digest = hashlib.sha256(f"{self.region}{args.args.get('name')}".encode()).hexdigest()
            return {"value": f"ami-{digest[:17]}", "name": args.args.get("name"), "type": "String"}
        if token == tokens.AWS_INDEX_GET_CALLER_IDENTITY:
            return {"accountId": "123456789012", "arn": "arn:aws:iam::123456789012:user/mock", "userId": "mock"}
        if token == tokens.AWS_INDEX_GET_PARTITION:
            return {"partition": "aws", "dnsSuffix": "amazonaws.com"}
        if token == tokens.AWS_EC2_GET_VPC:
            return {"id": args.args.get("id", "vpc-0mock"), "cidrBlock": "10.99.0.0/16"}
        if token == tokens.AWS_INDEX_GET_REGION:
            return {"name": self.region, "region": self.region}
        if token == tokens.AWS_EC2_GET_SUBNETS:
            # An existing subnet's zone is AWS's to know: offline, every subnet named by id matches
            # (`ck8s-gpu preflight` reads the real zones: components/preflight).
            ids = [v for f in args.args.get("filters") or [] if f.get("name") == "subnet-id"
                   for v in f.get("values") or []]
            return {"id": args.args.get("id", "mock"), "ids": ids}
        return {}


@dataclass
class PlanRun:
    resources: list[Recorded]
    outputs: dict[str, Any]


def run_program(
    program: Callable[[], Any],
    config: Mapping[str, Any],
    *,
    stack: str,
    project: str = "ck8s-gpu",
    region: str = "",
    secret_keys: list[str] | None = None,
    preview: bool = False,
    root_directory: Path | None = None,
) -> PlanRun:
    """Run `program` (the real __main__ or a test program) under mocks; return what it registered.

    `root_directory` is the program's Pulumi project folder, as the engine would report it
    (pulumi.runtime.get_root_directory): paths relative to it are what a real run records."""
    monitor = RecordingMonitor(PlanMocks(region))
    # Each run gets a fresh event loop: the SDK keeps per-loop state between runs otherwise.
    asyncio.set_event_loop(asyncio.new_event_loop())
    # A fresh root stack per run, so exports of an earlier run in this process never leak in.
    pulumi_settings.ROOT.set(None)
    pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    # A run that failed leaves its RPCs and pending outputs (tasks of its own, now closed, loop) in
    # the SDK's global settings; the next run's wait_for_rpcs would await them for ever. Clear them
    # as the SDK's own `pulumi.runtime.test` decorator does (pulumi/runtime/mocks.py).
    pulumi_settings.SETTINGS.rpc_manager.clear()
    pulumi_settings.SETTINGS.outputs.clear()
    pulumi_settings.SETTINGS.root_directory = str(root_directory) if root_directory else None
    wire = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    pulumi.runtime.set_all_config(wire, secret_keys or [])
    root = pulumi.runtime.get_root_resource()

    _sync_await(run_pulumi_func(program))
    outputs: dict[str, Any] = {}
    for key, value in (getattr(root, "outputs", None) or {}).items():
        outputs[key] = _resolve_export(value)
    return PlanRun(resources=monitor.recorded, outputs=outputs)


def _resolve_export(value: Any) -> Any:
    if isinstance(value, pulumi.Output):
        if _sync_await(value.is_secret()):
            return MASK
        if not _sync_await(value.is_known()):
            return "<computed>"
        return _sync_await(value.future())
    return value
