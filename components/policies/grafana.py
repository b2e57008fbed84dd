"""Grafana's admin credentials: never a literal password, never a published default.

Where Grafana comes from: the `grafana` chart (values at the top), or kube-prometheus-stack's
`grafana` subchart (values under `grafana.`, installed unless `grafana.enabled` is boolean false:
Helm drops a dependency only for a bool condition and ignores a non-bool one, helm v3
pkg/chartutil/dependencies.go `processDependencyConditions`).

How the charts set the password (grafana-community/helm-charts grafana-12.11.1, the subchart of the
pinned kube-prometheus-stack 88.5.3): `admin.existingSecret` names a Secret the operator manages
(key `admin.passwordKey`); else the chart writes `adminPassword` into a Secret of its own, or, when
that is unset, a random 40 characters it keeps across upgrades (templates/_config.tpl
`grafana.secretsData`, _helpers.tpl `grafana.password`). `env.GF_SECURITY_ADMIN_PASSWORD`,
`envRenderSecret` and `grafana.ini` `security.admin_password` set it too (Grafana's own
configuration: environment variables override grafana.ini; `$__file{}`/`$__env{}` expand).
kube-prometheus-stack itself set `grafana.adminPassword: prom-operator` until 79.0.0
(prometheus-community/helm-charts c215211a0, "Fix insecure default password in grafana").

Forbidden:
- a literal password in any of those places, Pulumi secret or not (Helm keeps the values in its
  release Secret and the chart copies them into another: the password has no single owner and
  changes only with a deploy);
- a chart whose default is a published password: kube-prometheus-stack before 79.0.0 with none
  of the above set;
- with the pack config `requireExistingSecret: true`, anything but a Secret the operator manages
  (`admin.existingSecret`, `GF_SECURITY_ADMIN_PASSWORD__FILE`, `envValueFrom`) or no initial
  admin at all (`GF_SECURITY_DISABLE_INITIAL_ADMIN_CREATION`).
Not forbidden by default: nothing set on a chart that generates the password (a random value in
a Secret of the release's namespace, which is where `admin.existingSecret` would put it too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from ..settings.credentials import is_literal
from .helm import HELM_TYPES, chart_ref
from .props import get, helm_truthy, is_unknown

PASSWORD_ENV = "GF_SECURITY_ADMIN_PASSWORD"
# The last kube-prometheus-stack major whose values set `grafana.adminPassword: prom-operator`.
KPS_PUBLISHED_DEFAULT_BEFORE = 79
# Grafana's configuration variable expansion (`$__env{}`, `$__file{}`, `$__vault{}`): a reference.
_EXPANSION = ("$__env{", "$__file{", "$__vault{")


def _grafana_values(props: Mapping[str, Any]) -> tuple[str, Mapping[str, Any], bool] | None:
    """(values prefix, Grafana's values, chart default is a published password) or None when the
    release installs no Grafana."""
    ref = chart_ref(props)
    values = props.get("values")
    values = values if isinstance(values, Mapping) else {}
    if ref is None:
        return None
    if ref.name == "grafana":
        return "", values, False
    if ref.name != "kube-prometheus-stack":
        return None
    if get(values, "grafana.enabled") is False:
        return None
    grafana = get(values, "grafana")
    return "grafana.", (grafana if isinstance(grafana, Mapping) else {}), _published_default(props.get("version"))


def _published_default(version: Any) -> bool:
    if not isinstance(version, str) or is_unknown(version):
        return False  # helm-release-pinned refuses a release without an exact version
    major = version.lstrip("v").split(".", 1)[0]
    return major.isdigit() and int(major) < KPS_PUBLISHED_DEFAULT_BEFORE


def _set(value: Any) -> bool:
    """A value given literally (a number too: the chart's templates print it as the password)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return True
    return is_literal(value) and not is_unknown(value)


def grafana_problems(resource_type: str, props: Mapping[str, Any], require_existing_secret: bool = False) -> list[str]:
    if resource_type not in HELM_TYPES:
        return []
    found = _grafana_values(props)
    if found is None:
        return []
    prefix, g, published_default = found
    raw_env = g.get("env")
    env: Mapping[str, Any] = raw_env if isinstance(raw_env, Mapping) else {}
    problems = []
    literals = [
        ("adminPassword", g.get("adminPassword")),
        (f"env.{PASSWORD_ENV}", env.get(PASSWORD_ENV)),
        (f"envRenderSecret.{PASSWORD_ENV}", get(g, f"envRenderSecret.{PASSWORD_ENV}")),
    ]
    ini = _ini_password(g)
    if not (isinstance(ini, str) and ini.strip().startswith(_EXPANSION)):
        literals.append(("grafana.ini security.admin_password", ini))
    for where, value in literals:
        if _set(value):
            problems.append(f"{prefix}{where} is a literal admin password; put it in a Secret you manage and name it "
                            f"in {prefix}admin.existingSecret")
    managed = (_set(get(g, "admin.existingSecret")) or _set(env.get(f"{PASSWORD_ENV}__FILE"))
               or get(g, f"envValueFrom.{PASSWORD_ENV}") is not None)
    no_admin = helm_truthy(env.get("GF_SECURITY_DISABLE_INITIAL_ADMIN_CREATION"))
    if problems or managed or no_admin:
        return problems
    if published_default:
        problems.append(f"{prefix}adminPassword is unset and kube-prometheus-stack {props.get('version')} defaults it "
                        f"to the published 'prom-operator'; set {prefix}admin.existingSecret")
    elif require_existing_secret:
        problems.append(f"no {prefix}admin.existingSecret: the chart generates the admin password itself; "
                        "this pack's config requires a Secret the operator manages")
    return problems


def _ini_password(g: Mapping[str, Any]) -> Any:
    ini = g.get("grafana.ini")  # the key contains a dot: no dotted path
    return get(ini, "security.admin_password") if isinstance(ini, Mapping) else None


def validate_grafana_admin(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    strict = bool(args.get_config().get("requireExistingSecret"))
    for problem in grafana_problems(args.resource_type, args.props, strict):
        report_violation(problem, None)


GRAFANA_ADMIN_CREDENTIALS = ResourceValidationPolicy(
    name="grafana-admin-credentials",
    description="Grafana's admin password is never a literal in release values nor a chart's published default.",
    validate=validate_grafana_admin,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={"requireExistingSecret": {"type": "boolean"}}),
)
