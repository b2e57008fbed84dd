"""The inference gateway (ADR 0052, docs/inference.md): Traefik's Gateway API implementation, one
shared Gateway that model servers attach HTTPRoutes to, for weighted splits (canaries, A/B of two
model versions) and header-based routing (a model name or an adapter in a header).

Chart `traefik` 41.3.0 (https://traefik.github.io/charts; traefik/traefik-helm-chart a8a66d0, the
v41.3.0 tag): values keys read from traefik/values.yaml, values.schema.json (additionalProperties
false on most sections: a misspelt key fails the install) and templates/_podtemplate.tpl,
gateway.yaml, gatewayclass.yaml, rbac/clusterrole.yaml, servicemonitor.yaml. The proxy is Traefik
v3.7.13 (pins.TRAEFIK), whose Gateway provider (github.com/traefik/traefik/v3 pkg/provider/
kubernetes/gateway) CI builds and runs with these values' flags (tests/integration/
test_inference_gateway_local.py). Choices, each against the chart's default:

- Only the Gateway provider: the Ingress and IngressRoute providers (on by default) and the default
  IngressClass are off, so this add-on never answers for an Ingress another controller (k8s-snap's
  `ingress` feature) owns, and its ClusterRole holds no Ingress or traefik.io rights
  (rbac/clusterrole.yaml gates each block on its provider).
- The chart's own GatewayClass `traefik` and Gateway `traefik-gateway` are off; this module's
  GatewayClass and Gateway go in as `extraObjects` (templates/extra-objects.yaml renders them as
  release objects), so the objects the readiness gate judges and CI applies are these very dicts.
  The listener takes routes only from namespaces labelled `ck8s-gpu/inference-routes: allowed`
  (labels.INFERENCE_ROUTES_LABEL); the chart's default would take them from its own namespace only.
- Gateway API CRDs: not in the chart (its README applies the release's standard-install.yaml
  first); the add-on applies that file at pins.GATEWAY_API before the release (crds_first.py), and
  refuses k8s-snap's own `gateway` feature beside it: that feature installs Gateway API v1.4.1
  (k8sd) and deletes the CRDs of every implementation when it is turned off.
- `global.checkNewVersion` false: no call home from an air-gapped cluster; usage data stays off.
- Two replicas and a PodDisruptionBudget (maxUnavailable 1): a node drain never takes the
  gateway of every model down.
- Metrics on the chart's `metrics` entry point (:9100, /metrics), with per-router series
  (`addRoutersLabels`, off in the chart): a router counts every request an HTTPRoute rule matched,
  answered or not, which is what wakes a model from zero replicas (docs/inference.md); per-service
  series exist only for a service with servers (pkg/server/service/service.go wraps each server's
  proxy). The metrics Service and a ServiceMonitor exactly where the Prometheus Operator's CRDs are
  (servicemonitor.yaml fails the install without them unless told not to check).
- The Service is ClusterIP, not the chart's LoadBalancer (values.yaml service.spec.type): with the AWS
  cloud controller manager a LoadBalancer Service becomes an internet-facing load balancer, and a
  model endpoint must not be public by accident. Clients in the cluster use the Service; to publish
  it, a stack sets `service.spec` (e.g. an internal NLB's annotations) in this add-on's values.
- `restricted` Pod Security: values.yaml's securityContext/podSecurityContext (non-root 65532,
  read-only root, no privilege escalation, all capabilities dropped, RuntimeDefault seccomp).
"""

from __future__ import annotations

from typing import Any

from ..kube.helm_values import helm_truthy
from ..settings.model import Settings
from ..tables import labels, pins
from .base import Addon, AddonContext, CrdManifest, GatewayGate
from .image_refs import Entry, ImageRef

NAME = "inference-gateway"
NAMESPACE = "inference-gateway"
CHART = "traefik"
# github.com/traefik/traefik/v3 v3.7.13 pkg/provider/kubernetes/gateway/kubernetes.go controllerName
CONTROLLER = "traefik.io/gateway-controller"
GATEWAY_CLASS = "ck8s-inference"
GATEWAY = "inference"
LISTENER = "web"
# The chart's `web` entry point (values.yaml ports.web.port; the Service maps exposedPort 80 to it):
# a Gateway listener binds to the entry point whose address has its port (kubernetes.go entryPointName).
WEB_PORT = 8000
ROUTES_LABEL = (labels.INFERENCE_ROUTES_LABEL, "allowed")
# The chart's Service (templates/_service.tpl traefik.service-name: traefik.fullname, which is the
# release name when it contains the chart's; the release is named for the chart, Addon.release_name)
# and its port for the `web` entry point (traefik.portname of the ports key): what clients in the
# cluster, and the smoke test through the API server's service proxy, send requests to.
SERVICE = CHART
SERVICE_PORT = LISTENER

_SOURCE = ("traefik/traefik-helm-chart v41.3.0 traefik/values.yaml image.*, templates/_helpers.tpl "
           "traefik.image-name: `<registry>/<repository>:<tag>`")


def gateway_class_object() -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
            "metadata": {"name": GATEWAY_CLASS},
            "spec": {"controllerName": CONTROLLER,
                     "description": "ck8s-gpu inference gateway: routes to model servers"}}


def gateway_object(port: int = WEB_PORT) -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": GATEWAY, "namespace": NAMESPACE},
            "spec": {"gatewayClassName": GATEWAY_CLASS,
                     "listeners": [{"name": LISTENER, "port": port, "protocol": "HTTP",
                                    "allowedRoutes": {"kinds": [{"kind": "HTTPRoute"}],
                                                      "namespaces": {"from": "Selector", "selector": {
                                                          "matchLabels": dict([ROUTES_LABEL])}}}}]}}


def values(ctx: AddonContext) -> dict[str, Any]:
    monitors = "monitoring-crds" in ctx.capabilities
    image = IMAGES[0].image
    return {
        "image": {"registry": image.registry, "repository": image.repository, "tag": image.tag},
        "global": {"checkNewVersion": False, "sendAnonymousUsage": False},
        "deployment": {"replicas": 2},
        "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
        "ingressClass": {"enabled": False},
        "service": {"spec": {"type": "ClusterIP"}},
        "providers": {"kubernetesCRD": {"enabled": False}, "kubernetesIngress": {"enabled": False},
                      "kubernetesGateway": {"enabled": True}},
        "gateway": {"enabled": False},
        "gatewayClass": {"enabled": False},
        "extraObjects": [gateway_class_object(), gateway_object()],
        "metrics": {"prometheus": {"addRoutersLabels": True, "service": {"enabled": monitors},
                                   "serviceMonitor": {"enabled": monitors}}},
        # Off-GPU, beside the other system add-ons.
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    }


def _check(settings: Settings) -> tuple[str, ...]:
    problems: list[str] = []
    if settings.kubernetes.features.gateway:
        # k8sd pkg/k8sd/features/cilium/gateway.go: enabling installs the Gateway API v1.4.1 CRDs
        # (older than the v1.5 floor of the standard CRDs' own safe-upgrades policy, which then
        # refuses them), disabling uninstalls that release with every Gateway and route in it.
        problems.append("kubernetes.features.gateway: true turns on Canonical Kubernetes' Cilium gateway, which "
                        f"installs its own Gateway API CRDs (v1.4.1) over the inference gateway's "
                        f"({pins.GATEWAY_API}) and deletes them when turned off; use one or the other")
    values = settings.gpu_stack.addons.inference_gateway.values
    where = "gpuStack.addons.inferenceGateway.values"
    # What the chart's templates see once the stack's values are merged over ours and Helm coalesces
    # them with the chart's: a null deletes the key, defaults included, so the section is gone and
    # its `enabled` is false to the template; a section without `enabled` keeps ours.
    for key, what, ours in (("gateway", "Gateway", False), ("gatewayClass", "GatewayClass", False),
                            ("providers.kubernetesGateway", "Gateway API provider", True)):
        on = _enabled(values, key.split("."), ours)
        if isinstance(on, str):
            problems.append(f"{where}.{on}")
        elif ours and on is False:
            problems.append(f"{where}.{key}: turns Traefik's {what} off; the gateway would have no controller and "
                            "every route would stay unprogrammed")
        elif not ours and on is True:
            problems.append(f"{where}.{key}: turns the chart's own {what} on; the add-on brings its own "
                            f"(GatewayClass {GATEWAY_CLASS}, Gateway {NAMESPACE}/{GATEWAY}), and a second one "
                            "would be a gateway nothing waits for")
    return tuple(problems)


def _enabled(values: dict[str, Any], path: list[str], ours: bool) -> bool | str | None:
    """The `enabled` the chart's template sees under `path` once the stack's values are merged over
    ours and Helm coalesces them with the chart's: None where the stack does not reach that far
    (ours stands); False where it nulls the section or a parent (Helm's coalesce deletes the key,
    the chart's default included); `enabled` by Go template truth; ours where the map leaves
    `enabled` out; a problem (`<path>: ...`) where a section is not a map."""
    node: Any = values
    for i, part in enumerate(path):
        if part not in node:
            return None
        node = node[part]
        if node is None:
            return False
        if not isinstance(node, dict):
            return f"{'.'.join(path[:i + 1])}: must be a map, got {node!r}"
    return helm_truthy(node["enabled"]) if "enabled" in node else ours


def crd_manifest(settings: Settings) -> CrdManifest:
    """The Gateway API standard channel at pins.GATEWAY_API: its release asset, or the stack's copy;
    every CRD in it carries the bundle version (config/crd/standard/*.yaml at v1.6.1)."""
    url = settings.gpu_stack.addons.inference_gateway.gateway_api_crds or pins.GATEWAY_API_CRDS_URL
    return CrdManifest(url, pins.GATEWAY_API, ("gateway.networking.k8s.io/bundle-version", pins.GATEWAY_API))


# --- Images: the proxy at pins.TRAEFIK (values image.tag; the chart's default is its appVersion).
# The chart's default repository `traefik` is Docker Hub's official image; spelled as its full name
# (`library/traefik`) so a mirror's path and the preload list name the image containerd stores.
IMAGES: tuple[Entry, ...] = (
    Entry(CHART, "traefik", ImageRef("docker.io", "library/traefik", pins.TRAEFIK, _SOURCE, verified=False,
                                     note="tag from pins.TRAEFIK (the release tagged in github.com/traefik/traefik/v3, "
                                          "which CI builds), not the chart's appVersion; not read from Docker Hub "
                                          "here: a missing tag fails the pull, it never runs another image"),
          keys=("image.registry", "image.repository", "image.tag"), mirror=(("image.registry", ""),)),
)

ADDON = Addon(
    name=NAME,
    settings_key="inference_gateway",
    description="Inference gateway (Traefik, Gateway API): weighted and header-based routes to model servers",
    namespace=NAMESPACE,
    platform_defaults={"aws": "off", "existing": "off", "kind": "off", "local": "off"},
    pod_security="restricted",
    values=values,
    chart_pin=CHART,
    images=IMAGES,
    after_crds_of=("monitoring-crds",),
    readiness="gateway",
    gateway=GatewayGate(GATEWAY_CLASS, CONTROLLER, NAMESPACE, GATEWAY),
    crd_manifest=crd_manifest,
    timeout_seconds=5 * 60,
    on_gpu_path=False,
    check=_check,
)
