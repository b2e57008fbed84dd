"""Resource type tokens live in components/tables/tokens.py only: the classes that register them and the
readers that match them (plan, timeline, policies, stamping, state) import the same constant."""

from __future__ import annotations

import importlib
import inspect
import io
import re
import tokenize

import pulumi.dynamic

from components.tables import tokens
from components.tables.paths import PROJECT_DIR

# Any `<package>:<module>:<Type>` string of a Pulumi package the project uses (pyproject's pulumi-*
# dependencies, the engine's own, the Python SDK's dynamic resources, ours): a resource or invoke token.
PACKAGES = ("aws", "kubernetes", "tls", "random", "command", "pulumi", "pulumi-python", "ck8s-gpu")
TOKEN = re.compile(rf"^({'|'.join(map(re.escape, PACKAGES))}):[A-Za-z0-9./-]*:[A-Za-z0-9]*$")
NOT_TOKENS = {"aws:ec2:image"}  # an SSM parameter data type (images/component.py), not a type token


def _string_literals(text: str) -> list[str]:
    out = []
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type == tokenize.STRING and not t.string.startswith(('"""', "'''")) and t.string[0] in "\"'":
            out.append(t.string[1:-1])
    return out


def test_no_module_but_tokens_spells_a_type_token() -> None:
    offenders = []
    for path in sorted((PROJECT_DIR / "components").rglob("*.py")):
        if path.name == "tokens.py":
            continue
        for s in _string_literals(path.read_text()):
            if TOKEN.match(s) and s not in NOT_TOKENS:
                offenders.append(f"{path.relative_to(PROJECT_DIR)}: {s}")
    assert offenders == []


def test_the_packages_are_the_ones_the_project_depends_on() -> None:
    deps = (PROJECT_DIR / "pyproject.toml").read_text()
    for package in PACKAGES:
        if package not in ("pulumi", "pulumi-python", "ck8s-gpu"):
            assert f'"pulumi-{package}==' in deps


def test_the_pattern_sees_the_spellings_in_use() -> None:
    values = [v for k, v in vars(tokens).items() if k.isupper() and isinstance(v, str)]
    assert len(values) > 90
    assert all(TOKEN.match(v) for v in values if v != tokens.PROVIDER_PREFIX)
    assert TOKEN.match("pulumi:providers:")  # the prefix readers test with startswith


def test_each_dynamic_token_is_the_one_the_sdk_registers_for_its_class() -> None:
    """pulumi/dynamic/dynamic.py: `pulumi-python:dynamic/<module>:<name>` of the class keywords."""
    sdk = set()
    for path in sorted((PROJECT_DIR / "components").rglob("*.py")):
        if "pulumi.dynamic" not in path.read_text():
            continue
        name = ".".join(path.relative_to(PROJECT_DIR).with_suffix("").parts)
        module = importlib.import_module(name)
        for _n, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, pulumi.dynamic.Resource) and cls is not pulumi.dynamic.Resource \
                    and cls.__module__ == module.__name__:
                sdk.add(f"pulumi-python:{cls._resource_type_name}")
    ours = {v for k, v in vars(tokens).items() if k.startswith("DYNAMIC_")}
    assert ours <= sdk, f"tokens.py names dynamic types no class registers: {sorted(ours - sdk)}"
    assert len(sdk) >= 7
