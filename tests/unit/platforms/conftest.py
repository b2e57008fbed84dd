"""Mock-engine runs here give kind's `kind create` Command a stdout, as the real command has.

Without it the kubeconfig flowing from that stdout is None under mocks, and nothing downstream
(secret-ness, the provider's cluster identifier) could be checked.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from components.plan import mockengine

KIND_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nkind-mock-ca\n-----END CERTIFICATE-----\n").decode()
KIND_KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: kind-ck8s-gpu
  cluster: {{server: "https://127.0.0.1:40123", certificate-authority-data: {KIND_CA}}}
users:
- name: kind-ck8s-gpu
  user: {{client-certificate-data: bW9jaw==, client-key-data: bW9jay1rZXk=}}
contexts:
- name: kind-ck8s-gpu
  context: {{cluster: kind-ck8s-gpu, user: kind-ck8s-gpu}}
current-context: kind-ck8s-gpu
"""


def patch_kind_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    original: Callable[..., dict[str, Any]] = mockengine._outputs

    def outputs(typ: str, name: str, inputs: dict[str, Any], region: str) -> dict[str, Any]:
        out = original(typ, name, inputs, region)
        if typ == "command:local:Command" and name.endswith("-kind"):
            out["stdout"] = KIND_KUBECONFIG
        return out

    monkeypatch.setattr(mockengine, "_outputs", outputs)


@pytest.fixture(autouse=True)
def kind_command_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_kind_stdout(monkeypatch)
