"""The provider process: serves the schema and constructs the components for the engine.

`pulumi.provider.Provider` (the pinned SDK's provider/provider.py) is the gRPC-facing base; the
engine calls `construct` once per component a program declares, in this process, with the
program's inputs. Children are registered from here with the same engine, exactly as a Python
program registers them.
"""

import inspect
import json
import typing
from typing import Any

import pulumi
from pulumi.errors import InputPropertiesError
from pulumi.provider import ConstructResult, Provider
from pulumi.provider.experimental.util import camel_case

from .mapping import python_names
from .resources import COMPONENTS
from .schema import NAME, project, schema

_BY_TOKEN = {f"{NAME}:index:{c.__name__}": c for c in COMPONENTS}


def output_names(component: type) -> list[str]:
    """The component's annotated `pulumi.Output` attributes (the analyzer's rule: its class and
    bases, no private names)."""
    names: list[str] = []
    for cls in reversed(component.__mro__):
        for name, annotation in inspect.get_annotations(cls).items():
            if typing.get_origin(annotation) is pulumi.Output and not name.startswith("_") \
                    and name not in names:
                names.append(name)
    return names


def construct_component(name: str, token: str, inputs: dict[str, Any],
                        options: pulumi.ResourceOptions | None) -> ConstructResult:
    """Build the component `token` names from the engine's `inputs` (schema names)."""
    component = _BY_TOKEN.get(token)
    if component is None:
        # An errors list even when empty: without one the pinned SDK's status lacks trailing metadata
        # and the engine sees an AttributeError instead (pulumi/provider/server.py).
        raise InputPropertiesError(f"unknown resource type {token}; this provider has "
                                   f"{', '.join(sorted(_BY_TOKEN))}", [])
    args = python_names(inputs, inspect.get_annotations(component.__init__)["args"])
    try:
        instance = component(name, args, options)
    except pulumi.RunError as exc:
        problems = getattr(exc, "problems", None)  # components/api.py args_error
        if problems is None:
            raise
        # Every bad field, as the engine reports input errors (`<type> resource '<name>' has a
        # problem: <title>` and one line per property), without this process's traceback
        # (pulumi/provider/server.py Construct turns InputPropertiesError into that status).
        title = str(exc).splitlines()[0].removesuffix(":")
        raise InputPropertiesError(title, [{"property_path": path, "reason": reason}
                                           for path, reason in problems]) from None
    return ConstructResult(instance.urn, {camel_case(n): getattr(instance, n) for n in output_names(component)})


class Ck8sGpuProvider(Provider):
    def __init__(self) -> None:
        spec = schema(project())
        super().__init__(spec["version"], json.dumps(spec))

    def construct(self, name: str, resource_type: str, inputs: pulumi.Inputs,
                  options: pulumi.ResourceOptions | None = None) -> ConstructResult:
        return construct_component(name, resource_type, dict(inputs), options)
