"""The node validation suite runs only against real nodes: `pytest tests/node --hosts=...`.

Without `--hosts` nothing here is collected, so the default test run never touches it (the
checks' logic is unit-tested in tests/unit/policies/test_node_checks.py). See docs/node-validation.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.node.checks import Expectations, Node, expectations_for


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ck8s-gpu node validation")
    group.addoption("--stack", help="stack whose settings the node was built from (stacks/Pulumi.<stack>.yaml)")
    group.addoption("--stack-file", help="path of a stack file, instead of --stack")
    group.addoption("--pool", help="node pool the node belongs to: its instance type sets the GPU count and model")
    group.addoption("--gpus", type=int, help="GPUs the node must show (overrides --pool)")
    group.addoption("--track", help="snap track the node must follow (overrides --stack)")
    group.addoption("--node-chroot", help="run every command under chroot DIR (kubectl debug pods: /host)")
    group.addoption("--dcgm-namespace", default="gpu-operator", help="namespace of the DCGM exporter pods")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.suffix == ".py" and not config.getoption("hosts", default=None):
        return True  # no target node: not part of this run
    return None


def _opt(config: pytest.Config, name: str) -> object:
    return config.getoption(name, default=None)


@pytest.fixture(scope="session")
def expectations(pytestconfig: pytest.Config) -> Expectations:
    from components.plan.run import stack_file
    from components.settings.load import read_stack_file
    from components.validate import from_config as settings_from_config

    stack, path = _opt(pytestconfig, "--stack"), _opt(pytestconfig, "--stack-file")
    ns = str(_opt(pytestconfig, "--dcgm-namespace") or "gpu-operator")
    if stack or path:
        file = Path(str(path)) if path else stack_file(str(stack))
        settings = settings_from_config(read_stack_file(file), str(file), offline=True)
        pool = _opt(pytestconfig, "--pool")
        exp = expectations_for(settings, str(pool) if pool else None, ns)
    else:
        exp = Expectations(dcgm_namespace=ns)
    gpus, track = _opt(pytestconfig, "--gpus"), _opt(pytestconfig, "--track")
    return Expectations(
        track=str(track) if track else exp.track,
        hold_refresh=exp.hold_refresh,
        gpus=int(str(gpus)) if gpus is not None else exp.gpus,
        product_name=None if gpus is not None else exp.product_name,
        cdi=exp.cdi,
        dcgm_namespace=exp.dcgm_namespace,
    )


@pytest.fixture(scope="module")
def node(host: object, pytestconfig: pytest.Config) -> Node:
    chroot = _opt(pytestconfig, "--node-chroot")
    return Node(host, str(chroot) if chroot else None)  # type: ignore[arg-type]
