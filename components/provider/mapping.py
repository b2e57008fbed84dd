"""Pure functions from what the engine sends a component to the Python API's args (components/api.py).

The engine sends a component's inputs with schema (camelCase) names and every number as a float
(pulumi/provider/experimental/component.py of the pinned SDK maps them the same way). Nothing is
validated here: the api dataclasses' `to_settings` checks every field at once and names each bad
one in a single message, whatever language the program is written in.
"""

import inspect
import typing
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from pulumi.provider.experimental.util import camel_case

from .. import api

_WRAPPERS = (typing.NotRequired, typing.Required)


def _unwrap(annotation: Any) -> Any:
    while typing.get_origin(annotation) in _WRAPPERS:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _whole(value: Any) -> Any:
    """2.0 -> 2 (the settings take ints strictly); other values as they are."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def python_names(value: Any, annotation: Any) -> Any:
    """The engine's `value` for a field of type `annotation` with the TypedDicts' Python names:
    schema names renamed as the analyzer derives them (camel_case), unknown names dropped, whole
    floats turned into ints. Values under `Any` (the `settings` passthrough) keep their names."""
    annotation = _unwrap(annotation)
    if typing.is_typeddict(annotation) and isinstance(value, Mapping):
        fields = {camel_case(name): (name, typ) for name, typ in inspect.get_annotations(annotation).items()}
        return {fields[k][0]: python_names(v, fields[k][1]) for k, v in value.items() if k in fields}
    if typing.get_origin(annotation) in (list, Sequence) and isinstance(value, list):
        [item] = typing.get_args(annotation)
        return [python_names(v, item) for v in value]
    return _whole(value)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _present(args: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The given fields only, so the dataclass defaults stand for the others."""
    return {n: _plain(args[n]) for n in names if n in args}


def pool(args: Any) -> api.GpuPool:
    args = args if isinstance(args, Mapping) else {}
    return api.GpuPool(name=args.get("name"), instance_type=args.get("instance_type"),  # type: ignore[arg-type]
                       **_present(args, ("nodes", "min_nodes", "max_nodes", "labels", "ami")))


def smoke_test(args: Any) -> api.SmokeTestArgs:
    args = args if isinstance(args, Mapping) else {}
    return api.SmokeTestArgs(**_present(args, ("enabled", "gpus", "scheduler", "timeout_seconds")))


def _common(args: Mapping[str, Any]) -> dict[str, Any]:
    pools = args.get("pools")
    out: dict[str, Any] = {"pools": [pool(p) for p in pools] if isinstance(pools, list | tuple) else None}
    if "smoke_test" in args:
        out["smoke_test"] = smoke_test(args["smoke_test"])
    return out


def addons_args(args: Mapping[str, Any]) -> api.GpuAddonsArgs:
    """GpuAddons' inputs (Python names, components/provider/args.py) -> the Python API's args."""
    return api.GpuAddonsArgs(kubeconfig=args.get("kubeconfig"), **_common(args),  # type: ignore[arg-type]
                             **_present(args, ("kubernetes_track", "driver", "simulated_gpus", "environment",
                                               "settings")))


def cluster_args(args: Mapping[str, Any]) -> api.GpuClusterArgs:
    """GpuCluster's inputs (Python names, components/provider/args.py) -> the Python API's args."""
    return api.GpuClusterArgs(region=args.get("region"), **_common(args),  # type: ignore[arg-type]
                              **_present(args, ("control_planes", "vpc_id", "private_subnet_ids",
                                                "public_subnet_ids", "api_allow_list", "kubernetes_track",
                                                "driver", "environment", "production", "tags", "settings")))
