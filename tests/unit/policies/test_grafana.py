"""grafana-admin-credentials: Grafana's admin password, however it is set, in both charts that install it."""

from typing import Any

import pytest

from components.policies.grafana import GRAFANA_ADMIN_CREDENTIALS
from components.policies.helm import CHART_V4, RELEASE
from components.tables import pins
from tests.unit.policies.helpers import violations

KPS = pins.chart("kube-prometheus-stack")


def kps(grafana: dict[str, Any] | None = None, version: str = KPS.version, **values: Any) -> dict[str, Any]:
    """A kube-prometheus-stack release as the add-on builds it, with Grafana values under `grafana`."""
    if grafana is not None:
        values["grafana"] = grafana
    return {"name": "kps", "namespace": "monitoring", "chart": KPS.name, "version": version,
            "repositoryOpts": {"repo": KPS.repo}, "values": values}


def grafana_chart(values: dict[str, Any]) -> dict[str, Any]:
    return {"name": "grafana", "namespace": "monitoring", "chart": "grafana", "version": "12.11.1",
            "repositoryOpts": {"repo": "https://grafana-community.github.io/helm-charts"}, "values": values}


# Every way to hand Grafana a literal admin password (values as the grafana chart reads them).
LITERALS = {
    "adminPassword": {"adminPassword": "s3cure-enough?"},
    "adminPassword, the old chart default": {"adminPassword": "prom-operator"},
    "adminPassword as a number": {"adminPassword": 12345678},
    "adminPassword beside an existing Secret": {"adminPassword": "x", "admin": {"existingSecret": "grafana-admin"}},
    "env GF_SECURITY_ADMIN_PASSWORD": {"env": {"GF_SECURITY_ADMIN_PASSWORD": "admin"}},
    "envRenderSecret": {"envRenderSecret": {"GF_SECURITY_ADMIN_PASSWORD": "admin"}},
    "grafana.ini security.admin_password": {"grafana.ini": {"security": {"admin_password": "admin"}}},
}


@pytest.mark.parametrize("values", LITERALS.values(), ids=LITERALS.keys())
@pytest.mark.parametrize("rtype", [RELEASE, CHART_V4])
def test_every_literal_admin_password_violates(rtype: str, values: dict[str, Any]) -> None:
    for props, prefix in ((kps(values), "grafana."), (grafana_chart(values), "")):
        found = violations(GRAFANA_ADMIN_CREDENTIALS, rtype, props)
        assert len(found) == 1 and found[0].startswith(prefix) and "literal admin password" in found[0], found
        assert f"{prefix}admin.existingSecret" in found[0]


# What the add-on may set instead (hand-written: components/addons/kube_prometheus_stack.py sets no Grafana values).
SAFE = {
    "nothing: the chart generates a random password": {},
    "a Secret the operator manages": {"admin": {"existingSecret": "grafana-admin"}},
    "a templated Secret name": {"admin": {"existingSecret": "{{ .Release.Name }}-admin", "passwordKey": "pw"}},
    "a password file": {"env": {"GF_SECURITY_ADMIN_PASSWORD__FILE": "/etc/secrets/admin/password"}},
    "env from a Secret": {"envValueFrom": {"GF_SECURITY_ADMIN_PASSWORD": {"secretKeyRef": {"name": "g", "key": "p"}}}},
    "no initial admin": {"env": {"GF_SECURITY_DISABLE_INITIAL_ADMIN_CREATION": "true"}},
    "grafana.ini expands a file": {"grafana.ini": {"security": {"admin_password": "$__file{/etc/secrets/pw}"}}},
    "an empty adminPassword (the chart's `if` is false)": {"adminPassword": ""},
    "an unknown value (preview)": {"adminPassword": "<computed>"},
}


@pytest.mark.parametrize("values", SAFE.values(), ids=SAFE.keys())
def test_passwords_the_operator_manages_pass(values: dict[str, Any]) -> None:
    assert violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, kps(values)) == []
    assert violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, grafana_chart(values)) == []


@pytest.mark.parametrize("version", ["78.5.0", "75.15.1", "v45.0.0"])
def test_a_chart_whose_default_is_published_needs_a_password_of_ours(version: str) -> None:
    """kube-prometheus-stack set grafana.adminPassword: prom-operator until 79.0.0."""
    found = violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, kps({}, version=version))
    assert len(found) == 1 and "prom-operator" in found[0]
    assert violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, kps(None, version=version))  # no grafana key at all
    managed = kps({"admin": {"existingSecret": "g"}}, version=version)
    assert violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, managed) == []
    assert violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, kps({}, version="79.0.0")) == []


@pytest.mark.parametrize(("enabled", "judged"),
                         [(False, False), (True, True), ("false", True), (0, True), (None, True)])
def test_grafana_is_installed_unless_disabled_by_a_boolean(enabled: Any, judged: bool) -> None:
    """Helm drops a dependency only for a bool condition; a string or number is ignored (enabled)."""
    grafana: dict[str, Any] = {"adminPassword": "x"}
    if enabled is not None:
        grafana["enabled"] = enabled
    assert bool(violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, kps(grafana))) is judged


def test_the_pack_config_can_require_a_managed_secret() -> None:
    strict = {"requireExistingSecret": True}
    found = violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, kps(), config=strict)
    assert len(found) == 1 and "requires a Secret the operator manages" in found[0]
    for managed in ({"admin": {"existingSecret": "g"}}, {"env": {"GF_SECURITY_DISABLE_INITIAL_ADMIN_CREATION": True}}):
        assert violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, kps(managed), config=strict) == []


def test_other_charts_are_not_grafana() -> None:
    other = {**grafana_chart({"adminPassword": "x"}), "chart": "gpu-operator"}
    assert violations(GRAFANA_ADMIN_CREDENTIALS, RELEASE, other) == []
    assert violations(GRAFANA_ADMIN_CREDENTIALS, "kubernetes:core/v1:ConfigMap", kps({"adminPassword": "x"})) == []
