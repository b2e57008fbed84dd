"""Credentials in add-on values (issue 27, docs/adr/0038): a plain one is refused with its field
path and how to pass it instead, before anything is written; a Pulumi secret is accepted and
reaches the Helm release as a secret, never as text in `out/`."""

from __future__ import annotations

import importlib.util
import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.cli.main import main
from components.plan import artifacts
from components.plan.mockengine import MASK, run_program
from components.plan.run import PROJECT_DIR, Plan
from components.policies import secrets as pack
from components.settings import SettingsError, credentials
from components.settings import secrets as sec
from components.settings.load import SETTINGS_KEY
from components.validate import from_config, parse
from tests.helpers.registrations import resources_only, watch_registrations
from tests.unit.helpers import settings_problems

BASE = "settings.gpuStack.addons.gpuOperator.values"
PLAIN = "s3cr3t-Registry-pw"


def _kind(values: dict[str, Any], addon: str = "gpuOperator") -> dict[str, Any]:
    return {"platform": "kind", "gpuStack": {"addons": {addon: {"values": values}}}}


_problems = settings_problems


# Equivalent spellings of "this key holds a credential", and values that are one whatever the key.
@pytest.mark.parametrize(("values", "path"), [
    ({"driver": {"repoConfig": {"password": PLAIN}}}, "driver.repoConfig.password"),
    ({"registryPassword": PLAIN}, "registryPassword"),
    ({"registry_password": PLAIN}, "registry_password"),
    ({"REGISTRY_PASSWORD": PLAIN}, "REGISTRY_PASSWORD"),
    ({"registry-passwd": PLAIN}, "registry-passwd"),
    ({"ngc": {"apiKey": PLAIN}}, "ngc.apiKey"),
    ({"ngc": {"api_key": PLAIN}}, "ngc.api_key"),
    ({"s3": {"secretAccessKey": PLAIN}}, "s3.secretAccessKey"),
    ({"oidc": {"clientSecret": PLAIN}}, "oidc.clientSecret"),
    ({"auth": {"token": PLAIN}}, "auth.token"),
    ({"slack": {"authToken": 123456789}}, "slack.authToken"),  # a number is a literal too
    ({"env": [{"x": {"password": PLAIN}}]}, "env[0].x.password"),
    ({"tls": {"key": "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"}}, "tls.key"),
    ({"aws": {"id": "AKIAIOSFODNN7EXAMPLE"}}, "aws.id"),
    ({"git": {"auth": "ghp_" + "a1B2" * 9}}, "git.auth"),
    ({"bearer": {"value": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"}}, "bearer.value"),
    ({"mirror": {"url": "https://robot:hunter22@registry.example.com/v2"}}, "mirror.url"),
    ({"pull": {"config": '{"auths": {"r.example.com": {"auth": "cm9ib3Q6aHVudGVy"}}}'}}, "pull.config"),
])
def test_a_plain_credential_is_refused_with_its_path_and_how_to_pass_it(values: dict[str, Any], path: str) -> None:
    found = _problems(_kind(values))
    where = f"{BASE}.{path}"
    assert list(found) == [where], found
    assert "looks like a credential" in found[where]
    # Pulumi's --path syntax for the settings key (docs: `pulumi config set --path`).
    assert f"pulumi config set --secret --path 'ck8s-gpu:{where}' <value>" in found[where]
    assert PLAIN not in found[where]  # the message never echoes the value


@pytest.mark.parametrize("values", [
    {"credentials": {"existingSecret": "registry-pull"}},  # names a Secret
    {"admin": {"secretName": "grafana-admin", "passwordKey": "password"}},
    {"passwordFile": "/etc/registry/password"},
    {"tokenTTL": 3600, "tokenPath": "/var/run/token"},
    {"credentials": {"useSecret": True}},
    {"imagePullSecrets": ["mirror-pull"]},
    {"password": ""}, {"password": "{{ .Values.global.password }}"}, {"token": "$(TOKEN)"},
    {"password": None}, {"token": False},
    {"driver": {"repository": "nvcr.io/nvidia", "version": "580.95.05"}},
    {"mirror": {"url": "https://registry.example.com:5000/v2"}},
    {"cert": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
])
def test_safe_look_alikes_are_accepted(values: dict[str, Any]) -> None:
    assert parse(_kind(values)).platform == "kind"


def test_one_recogniser_for_add_on_values_node_files_and_objects() -> None:
    """Issue 45: the settings' rule and the policy pack read the same functions, and no second
    recogniser or word table is left (components/settings/credentials.py)."""
    for name in ("findings", "credential_assignments", "credential_literals"):
        assert getattr(pack, name) is getattr(credentials, name)
    assert sec.findings is credentials.findings and sec.credential_literals is credentials.credential_literals
    assert importlib.util.find_spec("components.policies.secret_material") is None
    assert not any(hasattr(sec, n) for n in ("CREDENTIAL_WORDS", "CREDENTIAL_PAIRS", "is_credential_key", "shape"))
    for name in ("DB_PASSWORD", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "registryPassword", "licenseKey"):
        assert credentials.is_credential_key(name)


def test_secret_text_is_the_value_for_rules_and_secret_in_reprs_and_dumps() -> None:
    s = sec.SecretText(PLAIN)
    assert s == PLAIN and str(s) == PLAIN and s.strip().lower() == PLAIN.lower()  # rules read the value
    assert PLAIN not in repr(s) and PLAIN not in repr({"password": s})  # pydantic errors, logs
    assert yaml.safe_dump({"password": s}) == "password: '[secret]'\n"
    assert s.reveal() == PLAIN and type(s.reveal()) is str


def test_under_a_secret_settings_key_rules_still_read_the_values() -> None:
    """Every string of the add-on values is a SecretText there: the precompiled-driver rule still
    reads `driver.version` as the branch it is."""
    raw = {"platform": "kind", "gpuStack": {"driver": "precompiled", "addons": {"gpuOperator": {"values": {
        "driver": {"version": "not-a-branch"}}}}}}
    with pytest.raises(SettingsError) as err:
        from_config({SETTINGS_KEY: raw}, "t", offline=True, secret=True)
    assert "'not-a-branch' is not a driver branch" in dict(err.value.problems)[f"{BASE}.driver.version"]


def _stack(tmp_path: Path, settings: dict[str, Any]) -> None:
    (tmp_path / "Pulumi.t.yaml").write_text(yaml.safe_dump({"config": {SETTINGS_KEY: settings}}))


def _grep(folder: Path, text: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text in p.read_text(errors="replace")]


def test_a_refused_credential_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _stack(tmp_path, _kind({"driver": {"repoConfig": {"password": PLAIN}}}))
    out = tmp_path / "out"
    assert main(["plan", "--stack", "t", "--stacks-dir", str(tmp_path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"  {BASE}.driver.repoConfig.password: looks like a credential" in err and PLAIN not in err
    assert not out.exists()


def test_a_pulumi_secret_in_values_plans_as_a_secret_and_never_reaches_out(tmp_path: Path) -> None:
    """The stack file holds `secure: v1:...` (what `pulumi config set --secret --path` writes): the
    offline plan cannot decrypt it, and writes neither it nor anything else but [secret] there."""
    cipher = "v1:Q2lwaGVydGV4dE5vYm9keURlY3J5cHRzSGVyZQ=="
    _stack(tmp_path, {"platform": "kind", "gpuStack": {"addons": {"kubePrometheusStack": {"values": {
        "grafana": {"adminPassword": {"secure": cipher}, "adminUser": "admin"}}}}}})
    out = tmp_path / "out"
    assert main(["plan", "--stack", "t", "--stacks-dir", str(tmp_path), "--out", str(out), "--quiet"]) == 0
    assert _grep(out, cipher) == [] and _grep(out, "Q2lwaGVy") == []
    values = yaml.safe_load((out / "releases" / "gpu-stack-kube-prometheus-stack.values.yaml").read_text())
    assert values["grafana"]["adminPassword"] == MASK and values["grafana"]["adminUser"] == "admin"
    doc = json.loads((out / "resources.json").read_text())
    release = next(r for r in doc["resources"] if r["name"] == "gpu-stack-kube-prometheus-stack")
    assert "values.grafana.adminPassword" in release["secret_paths"]  # that leaf only: the rest stays readable
    assert "values.grafana.adminUser" not in release["secret_paths"]


def test_a_pulumi_secret_anywhere_else_is_refused_with_its_path() -> None:
    config = {SETTINGS_KEY: {"platform": "kind", "environment": {"secure": "v1:abc"},
                             "gpuStack": {"addons": {"gpuOperator": {"values": {"x": {"secure": "v1:def"}}}}}}}
    with pytest.raises(SettingsError) as err:
        from_config(config, "t", offline=True)
    found = dict(err.value.problems)
    assert "a Pulumi secret (secure:) is accepted only under gpuStack.addons.<x>.values" in found[
        "settings.environment"]
    assert not any(p.startswith(BASE) for p in found)


def _run(settings: dict[str, Any], secret_keys: list[str]) -> Any:
    return run_program(lambda: runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__"),
                       {SETTINGS_KEY: settings}, stack="t", secret_keys=secret_keys, root_directory=PROJECT_DIR)


def test_under_the_engine_a_secret_settings_key_makes_its_values_secrets(tmp_path: Path) -> None:
    """The engine hands over decrypted JSON and lists the whole key secret (value.go hasSecureValue):
    the credential is accepted and every string of the add-on values reaches the release secret."""
    settings = _kind({"driver": {"repoConfig": {"password": PLAIN}}, "operator": {"defaultRuntime": "containerd"}},
                     addon="kubePrometheusStack")
    run = _run(settings, [SETTINGS_KEY])
    release = next(r for r in run.resources if r.name == "gpu-stack-kube-prometheus-stack")
    assert release.inputs["values"]["driver"]["repoConfig"]["password"] == MASK
    assert "values.driver.repoConfig.password" in release.secret_paths
    assert release.raw_inputs["values"]["driver"]["repoConfig"]["password"] == PLAIN  # Helm gets the value
    out = tmp_path / "out"
    artifacts.write(Plan(stack="t", settings=parse(_kind({})), resources=run.resources, outputs=run.outputs), out)
    assert _grep(out, PLAIN) == []


def test_under_the_engine_a_plain_credential_registers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = watch_registrations(monkeypatch)
    with pytest.raises(pulumi.RunError) as err:
        _run(_kind({"driver": {"repoConfig": {"password": PLAIN}}}), [])
    assert f"{BASE}.driver.repoConfig.password" in str(err.value) and PLAIN not in str(err.value)
    assert resources_only(recorded) == []
