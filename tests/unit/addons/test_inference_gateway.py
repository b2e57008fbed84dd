"""The inference gateway add-on (components/addons/inference_gateway.py, ADR 0052): off unless a stack
asks, only Traefik's Gateway API provider on, the add-on's own GatewayClass and Gateway as the chart's
extraObjects, the Gateway API CRDs applied first from the pinned release manifest, the gate on the
Gateway after the release, and every spelling of a value that breaks it refused. The controller and
proxy themselves run in tests/integration/test_inference_gateway_local.py."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from components.addons import inference_gateway as gw
from components.addons.graph import AddonGraphError, final_values, install_graph
from components.settings import SettingsError, parse_settings
from components.settings.model import Settings
from components.tables import pins, tokens
from tests.unit.addons.helpers import by_name
from tests.unit.addons.test_upgrades import run

AWS: dict[str, Any] = {"platform": "aws", "environment": "dev", "region": "eu-west-1",
                       "network": {"availabilityZones": ["eu-west-1a", "eu-west-1b"]}}
EXISTING: dict[str, Any] = {"platform": "existing", "environment": "dev"}


def stack(base: dict[str, Any], values: dict[str, Any] | None = None, **entry: Any) -> Settings:
    addon: dict[str, Any] = {"enabled": True, **entry, **({"values": values} if values is not None else {})}
    return parse_settings({**base, "gpuStack": {"addons": {"inferenceGateway": addon}}})


def values(s: Settings) -> dict[str, Any]:
    out: dict[str, Any] = final_values(install_graph(s), s)[gw.NAME]
    return out


def problems(s: Settings) -> str:
    with pytest.raises(AddonGraphError) as e:
        install_graph(s)
    return str(e.value)


def test_off_unless_a_stack_asks_for_it() -> None:
    for base in (AWS, EXISTING, {"platform": "local"}):
        assert gw.NAME not in install_graph(parse_settings(base)).names
    assert gw.NAME in install_graph(stack(EXISTING)).names


def test_only_the_gateway_provider_and_the_add_ons_own_gateway() -> None:
    v = values(stack(AWS))
    assert v["providers"] == {"kubernetesCRD": {"enabled": False}, "kubernetesIngress": {"enabled": False},
                              "kubernetesGateway": {"enabled": True}}
    assert v["ingressClass"] == {"enabled": False}
    assert v["gateway"] == {"enabled": False} and v["gatewayClass"] == {"enabled": False}
    gc, gateway = v["extraObjects"]
    assert gc["kind"] == "GatewayClass" and gc["spec"]["controllerName"] == "traefik.io/gateway-controller"
    assert len(gc["spec"]["description"]) <= 64  # the v1.6.1 CRD's maxLength (the real API server refused 78)
    assert gateway["metadata"] == {"name": gw.GATEWAY, "namespace": gw.NAMESPACE}
    assert gateway["spec"]["gatewayClassName"] == gc["metadata"]["name"]
    [listener] = gateway["spec"]["listeners"]
    # the chart's `web` entry point: a listener binds to the entry point with its port
    assert listener["port"] == 8000 and listener["protocol"] == "HTTP"
    assert listener["allowedRoutes"]["namespaces"] == {
        "from": "Selector", "selector": {"matchLabels": {"ck8s-gpu/inference-routes": "allowed"}}}
    assert v["global"] == {"checkNewVersion": False, "sendAnonymousUsage": False}
    assert v["deployment"]["replicas"] == 2 and v["podDisruptionBudget"] == {"enabled": True, "maxUnavailable": 1}


def test_the_gateway_is_not_published_by_default() -> None:
    # The chart's default is a LoadBalancer Service: with the AWS cloud controller manager, an
    # internet-facing load balancer in front of every model.
    assert values(stack(AWS))["service"] == {"spec": {"type": "ClusterIP"}}
    # The Service the smoke test and in-cluster clients use: traefik.fullname of a release named
    # for the chart is the release name.
    assert gw.ADDON.release_name == gw.SERVICE == "traefik" and gw.SERVICE_PORT == "web"


def test_the_proxy_at_the_pin_and_under_a_mirror() -> None:
    assert values(stack(AWS))["image"] == {"registry": "docker.io", "repository": "library/traefik",
                                            "tag": pins.TRAEFIK}
    mirrored = values(parse_settings({**AWS, "images": {"mirror": "registry.example.com/hub"},
                                      "gpuStack": {"addons": {"inferenceGateway": {"enabled": True}}}}))
    assert mirrored["image"]["registry"] == "registry.example.com/hub/docker.io"
    assert mirrored["image"]["repository"] == "library/traefik"


def test_service_monitor_exactly_where_the_prometheus_operator_crds_are() -> None:
    with_monitoring = values(stack(AWS))  # aws installs kube-prometheus-stack by default
    assert with_monitoring["metrics"]["prometheus"] == {"addRoutersLabels": True, "service": {"enabled": True},
                                                        "serviceMonitor": {"enabled": True}}
    # servicemonitor.yaml fails the install where monitoring.coreos.com/v1 is not served
    without = values(parse_settings({**EXISTING, "gpuStack": {"addons": {"inferenceGateway": {"enabled": True}}}}))
    assert without["metrics"]["prometheus"]["serviceMonitor"] == {"enabled": False}


@pytest.mark.parametrize("override", [
    {"gateway": {"enabled": True}},
    {"gateway": {"enabled": "false"}},  # a non-empty string is true to a Go template
    {"gatewayClass": {"enabled": 1}},
    {"gatewayClass": {"enabled": "no"}},
])
def test_a_second_gateway_from_the_chart_is_refused(override: dict[str, Any]) -> None:
    [key] = override
    assert f"gpuStack.addons.inferenceGateway.values.{key}: turns the chart's own" in problems(stack(AWS, override))


@pytest.mark.parametrize("override", [
    {"providers": {"kubernetesGateway": {"enabled": False}}},
    {"providers": {"kubernetesGateway": {"enabled": ""}}},
    {"providers": {"kubernetesGateway": {"enabled": 0}}},
    {"providers": {"kubernetesGateway": {"enabled": None}}},
    {"providers": {"kubernetesGateway": None}},  # Helm's coalesce drops the section, defaults included
    {"providers": None},
])
def test_the_gateway_provider_turned_off_is_refused(override: dict[str, Any]) -> None:
    assert "providers.kubernetesGateway: turns Traefik's Gateway API provider off" in problems(stack(AWS, override))


@pytest.mark.parametrize("override", [{"gateway": True}, {"providers": {"kubernetesGateway": "on"}}])
def test_a_section_that_is_not_a_map_is_named(override: dict[str, Any]) -> None:
    assert "must be a map" in problems(stack(AWS, override))


@pytest.mark.parametrize("override", [
    {"gateway": {"enabled": False}}, {"gateway": None}, {"gatewayClass": {"labels": {"team": "ml"}}},
    {"providers": {"kubernetesGateway": {"enabled": "true"}}}, {"providers": {"kubernetesGateway": {"qps": 20}}},
    {"providers": {"kubernetesCRD": None}},
])
def test_values_that_keep_one_gateway_and_its_controller_pass(override: dict[str, Any]) -> None:
    assert gw.NAME in install_graph(stack(AWS, override)).names


def test_the_snaps_own_gateway_feature_beside_it_is_refused() -> None:
    s = parse_settings({**AWS, "kubernetes": {"features": {"gateway": True}},
                        "gpuStack": {"addons": {"inferenceGateway": {"enabled": True}}}})
    assert "kubernetes.features.gateway: true" in problems(s)
    assert gw.NAME not in install_graph(parse_settings({**AWS, "kubernetes": {"features": {"gateway": True}}})).names


def test_gateway_api_crds_from_the_release_or_the_stacks_copy() -> None:
    m = gw.crd_manifest(stack(AWS))
    assert m.url == f"https://github.com/kubernetes-sigs/gateway-api/releases/download/{pins.GATEWAY_API}/" \
                    "standard-install.yaml"
    assert m.annotation == ("gateway.networking.k8s.io/bundle-version", pins.GATEWAY_API)
    copy = "https://mirror.example.com/gateway-api/v1.6.1/standard-install.yaml"
    assert gw.crd_manifest(stack(AWS, gatewayApiCrds=copy)).url == copy
    for bad in ("file:///etc/passwd", "mirror.example.com/standard-install.yaml", "https://a b"):
        with pytest.raises((SettingsError, ValidationError)) as e:
            stack(AWS, gatewayApiCrds=bad)
        assert "gatewayApiCrds" in str(e.value)


def test_crds_first_then_the_release_then_the_gate() -> None:
    plan = run(stack(AWS))
    res = by_name(plan)
    crds, release, gate = res["gpu-inference-gateway-crds"], res["gpu-inference-gateway"], \
        res["gpu-inference-gateway-gateway-ready"]
    assert crds.type == tokens.DYNAMIC_CRDS_FIRST and gate.type == tokens.DYNAMIC_GATEWAY_READY
    assert crds.inputs["manifest"] == gw.crd_manifest(stack(AWS)).url
    assert crds.inputs["expectAnnotation"] == ["gateway.networking.k8s.io/bundle-version", pins.GATEWAY_API]
    assert crds.urn in release.dependencies and release.urn in gate.dependencies
    assert {k: gate.inputs[k] for k in ("gatewayClass", "controller", "namespace", "objectName")} == {
        "gatewayClass": gw.GATEWAY_CLASS, "controller": gw.CONTROLLER, "namespace": gw.NAMESPACE,
        "objectName": gw.GATEWAY}
    assert "kubeconfig" in gate.secret_paths and "kubeconfig" in crds.secret_paths
    assert release.inputs["chart"] == "traefik" and release.inputs["version"] == pins.CHARTS["traefik"].version
