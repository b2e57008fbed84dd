"""Property test (issue 14): mutated stack files through the real CLI entry point end in exit 0 or
one clean error naming field paths, never a traceback, a hang or a huge echo.

Mutations start from the committed stacks (every platform) and replace one to three random places
with hostile values: wrong types, NaN/Inf, huge numbers, odd text, deep nesting, unknown keys,
and the syntax of labels, taints, CIDRs and regions. Deterministic (derandomized) so CI is stable;
each case has a wall-clock bound (hypothesis' deadline).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components import PROJECT_DIR
from components.cli.main import main

STACKS = {p.name.split(".")[1]: yaml.safe_load(p.read_text())["config"]
          for p in sorted((PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))}
# A field path: settings, then .key, [index] or ["quoted key"] segments (components/settings/problems.py path_key).
PATH_LINE = re.compile(r'^  (settings|config\.[\w:-]+|file)(\.[^\s:\[\]"]+|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*: .+')

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40), st.text(alphabet="0123456789./:abcdef-", max_size=25),  # CIDR/region-ish
    st.sampled_from(["::/0", "0.0.0.0/0", "10.0.0.0/33", "fd00::/56", "eu-west-99", "us-east-1 ", "a b=c:NoSchedule",
                     "node-role.kubernetes.io/control-plane", "$(reboot)", "x" * 5000, "", "-", "ami-0", "/aws/x"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=8), st.integers(), max_size=3),
    st.recursive(st.integers(), lambda c: st.lists(c, max_size=2), max_leaves=40),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc[path[0]] = _set(doc[path[0]], path[1:], value)
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    stack = draw(st.sampled_from(sorted(STACKS)))
    config = yaml.safe_load(yaml.safe_dump(STACKS[stack]))  # a deep copy
    settings_doc = config["ck8s-gpu:settings"]
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(settings_doc)
        path = draw(st.sampled_from(paths))
        if draw(st.booleans()) and isinstance(_get(settings_doc, path), dict):
            key = draw(st.text(min_size=1, max_size=12))  # an unknown (or colliding) key
            _get(settings_doc, path)[key] = draw(HOSTILE)
        else:
            settings_doc = _set(settings_doc, path, draw(HOSTILE))
    config["ck8s-gpu:settings"] = settings_doc
    return stack, config


ADDONS = ["gpuOperator", "draDriver", "kaiScheduler", "kaiQueues", "observability", "kubePrometheusStack",
          "fakeGpuOperator", "awsCloudControllerManager", "velero"]
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**64), max_value=2**64),
              st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(min_size=1, max_size=10), c, max_size=3)),
    max_leaves=25)
LABEL_KEY = st.from_regex(r"\A([a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?\Z")
LABEL_VALUE = st.from_regex(r"\A([A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?)?\Z")


@st.composite
def near_valid(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """Settings that may pass validation: free-form add-on values, well-formed labels and taints,
    numbers at their bounds. What passes must then plan (exit 0) or be refused cleanly (exit 2)."""
    stack = draw(st.sampled_from(sorted(STACKS)))
    config = yaml.safe_load(yaml.safe_dump(STACKS[stack]))
    doc = config["ck8s-gpu:settings"]
    choice = draw(st.sampled_from(["values", "labels", "taints", "numbers"]))
    if choice == "values":
        addon = draw(st.sampled_from(ADDONS))
        doc.setdefault("gpuStack", {}).setdefault("addons", {}).setdefault(addon, {})["values"] = draw(
            st.dictionaries(st.text(min_size=1, max_size=12), JSONISH, max_size=4))
    elif choice in ("labels", "taints"):
        pool = doc.setdefault("nodePools", [{"name": "gpu"}])[0]
        if choice == "labels":
            pool["labels"] = draw(st.dictionaries(LABEL_KEY, LABEL_VALUE, max_size=3))
        else:
            pool["taints"] = draw(st.lists(st.fixed_dictionaries({
                "key": LABEL_KEY, "value": LABEL_VALUE,
                "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])}), max_size=2))
    else:
        smoke = doc.setdefault("smokeTest", {})
        smoke["gpus"] = draw(st.integers(min_value=0, max_value=300))
        doc.setdefault("controlPlane", {})["count"] = draw(st.sampled_from([0, 1, 2, 3, 5]))
    return stack, config


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _check(case: tuple[str, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack, config = case
    (tmp_path / "Pulumi.mutant.yaml").write_text(yaml.safe_dump({"config": config}, allow_unicode=True))
    code = main(["plan", "--stack", "mutant", "--stacks-dir", str(tmp_path), "--quiet"])
    captured = capsys.readouterr()
    err = captured.err
    assert code in (0, 2), f"{stack}: exit {code}\n{err[-3000:]}"
    assert "Traceback" not in err and "Traceback" not in captured.out
    assert len(err) < 20_000
    if code == 2:
        lines = err.splitlines()
        assert lines[0].startswith("ck8s-gpu plan: "), err[:500]
        problems = [line for line in lines[1:] if line.startswith("  ")]
        assert problems and all(PATH_LINE.match(line) for line in problems), err[:2000]


COMMON = {"deadline": 30_000, "derandomize": True, "database": None,
          "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]}


@settings(max_examples=150, **COMMON)
@given(case=mutated())
def test_mutated_stack_files_exit_0_or_name_the_bad_fields(case: tuple[str, dict[str, Any]], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _check(case, tmp_path, capsys)


@settings(max_examples=40, **COMMON)
@given(case=near_valid())
def test_near_valid_stack_files_plan_or_name_the_bad_fields(case: tuple[str, dict[str, Any]], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _check(case, tmp_path, capsys)


# Issue 27's classes: each mutation is one the settings must refuse, naming the field.
CREDENTIAL_KEYS = st.sampled_from(["password", "registryPassword", "api_key", "authToken", "clientSecret",
                                   "SECRET_KEY", "accessKey"])


@st.composite
def must_refuse(draw: st.DrawFn) -> tuple[str, str, str]:
    """(stack, stack file text, a field path the refusal must name)."""
    stack = draw(st.sampled_from(sorted(STACKS)))
    config = yaml.safe_load(yaml.safe_dump(STACKS[stack]))
    doc = config["ck8s-gpu:settings"]
    pool = doc.setdefault("nodePools", [{"name": "gpu"}])[0]
    kind = draw(st.sampled_from(["size", "bool-count", "yes-bool", "duplicate", "priority", "fraction", "cp-type",
                                 "credential"]))
    marker = "__YAML_1_1__"
    if kind == "size":
        field = draw(st.sampled_from(["minSize", "desiredSize", "maxSize"]))
        pool[field] = draw(st.integers(min_value=5001, max_value=2**62))
        path = f"settings.nodePools[0].{field}"
    elif kind == "bool-count":
        where = draw(st.sampled_from([("smokeTest", "gpus"), ("controlPlane", "count"),
                                      ("smokeTest", "timeoutSeconds")]))
        doc.setdefault(where[0], {})[where[1]] = draw(st.booleans())
        path = f"settings.{where[0]}.{where[1]}"
    elif kind == "yes-bool":
        doc.setdefault("kubernetes", {})["holdSnapRefresh"] = marker
        path = "settings.kubernetes.holdSnapRefresh"
    elif kind == "duplicate":
        path = "settings.environment"
    elif kind in ("priority", "fraction"):
        queue: dict[str, Any] = {"name": "fuzzed", "parent": "gpu-root"}
        if kind == "priority":
            queue["priority"] = draw(st.integers(min_value=-(2**31), max_value=-1))
            leaf = "priority"
        else:
            queue["gpu"] = {"quota": draw(st.floats(min_value=-0.999, max_value=-0.001))}
            leaf = "gpu.quota"
        doc["queues"] = [*(doc.get("queues") or [{"name": "gpu-root"}, {"name": "default", "parent": "gpu-root"},
                                                 {"name": "smoke-test", "parent": "gpu-root"}]), queue]
        path = f"settings.queues[{len(doc['queues']) - 1}].{leaf}"
    elif kind == "cp-type":
        doc.setdefault("controlPlane", {})["instanceType"] = draw(st.sampled_from(["banana", "m7i", "xlarge", "M7I.X"]))
        path = "settings.controlPlane.instanceType"
    else:
        key = draw(CREDENTIAL_KEYS)
        addon = draw(st.sampled_from(ADDONS))
        doc.setdefault("gpuStack", {}).setdefault("addons", {}).setdefault(addon, {}).setdefault("values", {})[
            "auth"] = {key: draw(st.from_regex(r"\A[A-Za-z0-9]{8,24}\Z"))}
        path = f"settings.gpuStack.addons.{addon}.values.auth.{key}"
    text = yaml.safe_dump({"config": config}, sort_keys=False).replace(f"'{marker}'", marker).replace(marker, "yes")
    if kind == "duplicate":
        text = text.replace("    platform:", "    environment: first\n    environment: second\n    platform:", 1)
    return stack, text, path


@settings(max_examples=60, **COMMON)
@given(case=must_refuse())
def test_each_issue_27_class_is_refused_naming_its_field(case: tuple[str, str, str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    stack, text, path = case
    (tmp_path / "Pulumi.mutant.yaml").write_text(text)
    code = main(["plan", "--stack", "mutant", "--stacks-dir", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, f"{stack}: accepted, expected {path} refused"
    assert "Traceback" not in err
    assert any(line.startswith(f"  {path}: ") for line in err.splitlines()), err[:2000]
