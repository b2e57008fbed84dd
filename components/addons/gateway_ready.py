"""GatewayReady: the inference gateway's gate (ADR 0052). The release is ready when its
GatewayClass is Accepted by the add-on's controller and its Gateway is Accepted and Programmed,
every listener programmed, all for the objects' current generation: what the Gateway API spec
defines as "configuration sent to the data plane" (components/kube/gateway_api.py). Helm's own
wait has already seen the proxy's Deployment roll out; this gate waits for the controller in it
to have judged the objects, and fails naming the condition and the controller's reason.

Re-checks when the chart version or the values change (`trigger`) or the kubeconfig does. The
dynamic provider is pickled into the state by reference: it must stay here under its name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

from ..k8s_ready import ObservingGateProvider, gate_client
from ..kube.errors import ApiFailure
from ..kube.gateway_api import gateway_class_problems, gateway_problems
from ..kube.wait import Observation, poll
from ..tables import tokens

TYPE = tokens.DYNAMIC_GATEWAY_READY
API = "/apis/gateway.networking.k8s.io/v1"


@dataclass(frozen=True)
class Target:
    gateway_class: str
    controller: str
    namespace: str
    name: str


# The API server's answer for a path no API serves (its CRDs are missing), as against the
# `<resource> "<name>" not found` of an object that does not exist (both are 404).
NOT_SERVED = "the server could not find the requested resource"


def _object(answer: str | ApiFailure) -> dict[str, Any] | ApiFailure | None:
    """The object; None when it does not exist; the failure when the API or the call failed."""
    if isinstance(answer, ApiFailure):
        return None if answer.status == 404 and NOT_SERVED not in answer.message else answer
    try:
        obj: dict[str, Any] = json.loads(answer)
    except ValueError:
        return ApiFailure(200, f"the answer is not JSON: {answer[:200]!r}")
    return obj


def judge(target: Target, gateway_class: str | ApiFailure, gateway: str | ApiFailure) -> Observation:
    """One poll's verdict from the two GET answers: every reason the gateway is not ready, in one line."""
    gc, gw = _object(gateway_class), _object(gateway)
    if isinstance(gc, ApiFailure) or isinstance(gw, ApiFailure):
        failure = gc if isinstance(gc, ApiFailure) else gw
        assert isinstance(failure, ApiFailure)
        if failure.status == 404:
            return Observation(False, "the Gateway API (gateway.networking.k8s.io/v1) is not served: its CRDs "
                                      "are missing")
        return Observation.failed(failure)
    problems = gateway_class_problems(gc, target.gateway_class, target.controller)
    problems += gateway_problems(gw, target.namespace, target.name)
    if problems:
        return Observation(False, "; ".join(problems))
    return Observation(True, f"GatewayClass {target.gateway_class} Accepted by {target.controller}; Gateway "
                             f"{target.namespace}/{target.name} Accepted and Programmed")


def wait_ready(kubeconfig: str, target: Target, timeout_seconds: float) -> str:
    from ..kube.client import http_get  # the kubernetes client is slow to import

    with gate_client(kubeconfig, lambda endpoint: f"inference gateway on {endpoint}") as (api, endpoint):

        def probe() -> Observation:
            return judge(target, http_get(api, f"{API}/gatewayclasses/{target.gateway_class}"),
                         http_get(api, f"{API}/namespaces/{target.namespace}/gateways/{target.name}"))

        def timed_out(elapsed: float, attempts: int, last: Observation) -> str:
            verb = "gave up" if last.permanent or last.fatal else "timed out"
            return (f"inference gateway {target.namespace}/{target.name} on {endpoint}: {verb} after "
                    f"{elapsed:.0f}s and {attempts} attempts waiting for Accepted and Programmed; last observed: "
                    f"{last.detail}")

        last, _ = poll(probe, timeout_seconds=timeout_seconds, describe_timeout=timed_out)
    return last.detail


class _GatewayReadyProvider(ObservingGateProvider):
    KEYS = ("gatewayClass", "controller", "namespace", "objectName", "trigger")
    ID_PREFIX = "gateway-ready"

    def observe(self, props: dict[str, Any]) -> str:
        target = Target(props["gatewayClass"], props["controller"], props["namespace"], props["objectName"])
        return wait_ready(str(props["kubeconfig"]), target, float(props["timeoutSeconds"]))


class GatewayReady(pulumi.dynamic.Resource, module="ck8s-gpu", name="GatewayReady"):  # type: ignore[misc,call-arg]
    """Succeeds once the Gateway `namespace/object_name` of class `gateway_class` (controller
    `controller`) is Accepted and Programmed; fails with every reason it is not."""

    observed: pulumi.Output[str]

    def __init__(self, name: str, kubeconfig: pulumi.Input[str], *, gateway_class: str, controller: str,
                 namespace: str, object_name: str, timeout_seconds: int, trigger: pulumi.Input[str] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(_GatewayReadyProvider(), name, {
            "kubeconfig": pulumi.Output.secret(kubeconfig), "gatewayClass": gateway_class, "controller": controller,
            "namespace": namespace, "objectName": object_name, "timeoutSeconds": timeout_seconds,
            "trigger": trigger, "observed": None, "kubeconfigSha256": None,
        }, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])))
