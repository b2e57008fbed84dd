"""Every dynamic provider in the package keeps the engine's calling convention for the hooks it
overrides. The engine calls `check(olds, news)`, `diff(id, olds, news)`, `create(props)`,
`read(id, props)`, `update(id, olds, news)`, `delete(id, props)` and `configure(req)` by position
(pulumi/dynamic/__main__.py); a method of one of those names with another shape (an operator gate
once named its poll `check(kubeconfig, **kwargs)`) fails every `up` with a TypeError that no
mock-engine test sees. Judged on every ResourceProvider subclass the package defines, found by
walking its modules, so a new provider is covered without being listed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pulumi.dynamic

import components

HOOKS = ("check", "diff", "create", "read", "update", "delete", "configure")


def _providers() -> list[type]:
    for info in pkgutil.walk_packages(components.__path__, "components."):
        if not info.name.endswith(".__main__"):  # the CLI's entry point runs on import
            importlib.import_module(info.name)
    seen: list[type] = []
    todo = list(pulumi.dynamic.ResourceProvider.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return [c for c in seen if c.__module__.startswith("components.")]


def test_the_walk_finds_the_providers() -> None:
    names = {c.__name__ for c in _providers()}
    # a walk that found nothing would pass the test below vacuously
    assert {"_ClusterPolicyReadyProvider", "_GpuClusterReadyProvider", "_DraModeGuardProvider"} <= names, names


def test_no_provider_shadows_a_hook_with_another_calling_convention() -> None:
    bad = []
    for cls in _providers():
        for hook in HOOKS:
            mine = inspect.getattr_static(cls, hook, None)
            base = inspect.getattr_static(pulumi.dynamic.ResourceProvider, hook)
            if mine is None or mine is base:
                continue
            arity = len(inspect.signature(base).parameters)  # self included
            try:
                inspect.signature(mine).bind(*range(arity))
            except TypeError as exc:
                bad.append(f"{cls.__module__}.{cls.__qualname__}.{hook}{inspect.signature(mine)}: {exc}")
    assert bad == [], bad
