"""A kubeconfig that fails to parse is reported by line and column, never by its content (issue 14:
the token used to appear in the traceback)."""

from __future__ import annotations

import runpy
import traceback

import pytest

from components import PROJECT_DIR
from components.kube.client import api_client
from components.plan.mockengine import run_program
from components.platforms.identity import cluster_identity
from components.settings.load import read_stack_file

TOKEN = "sk-live-0123456789abcdef"  # a canary, not a credential
BROKEN = f"""apiVersion: v1
clusters: [{{name: c, cluster: {{server: "https://10.0.0.1:6443"}}}}]
users:
- name: u
  user: {{token: {TOKEN}
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
"""


@pytest.mark.parametrize("parse", [api_client, cluster_identity])
def test_a_parse_error_names_the_place_not_the_content(parse: object) -> None:
    with pytest.raises(ValueError) as err:
        parse(BROKEN)  # type: ignore[operator]
    text = "".join(traceback.format_exception(err.value))
    assert TOKEN not in text
    assert "kubeconfig is not valid YAML (line" in str(err.value) and "not shown" in str(err.value)


def test_the_program_fails_without_echoing_a_broken_kubeconfig() -> None:
    config = read_stack_file(PROJECT_DIR / "stacks" / "Pulumi.local.yaml")
    config["ck8s-gpu:kubeconfig"] = BROKEN
    with pytest.raises(Exception) as err:  # whatever the SDK wraps it in
        run_program(lambda: runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__"), config,
                    stack="local", secret_keys=["ck8s-gpu:kubeconfig"])
    text = "".join(traceback.format_exception(err.value))
    assert TOKEN not in text, text[-2000:]
