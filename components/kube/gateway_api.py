"""Gateway API status, judged the way the spec defines it (sigs.k8s.io/gateway-api v1.6.1,
apis/v1/gateway_types.go, httproute_types.go, shared_types.go): pure functions over the objects as
the API server returns them, for the inference gateway's readiness gate and the smoke test's route
hops (docs/inference.md, ADR 0052).

- A Gateway is ready when its `Accepted` and `Programmed` conditions are True, each written for the
  Gateway's current generation (a condition's `observedGeneration` older than
  `metadata.generation` describes a spec that no longer exists), and every listener's status says
  `Programmed` True with no `Conflicted` True (ListenerConditionType). `Programmed` is the one that
  means "configuration sent to the data plane" (GatewayConditionProgrammed).
- A route is ready on a parent when the parent's entry in `status.parents` (matched by parentRef
  and written by the gateway's controller, `controllerName`: another controller's entry says
  nothing about this one) has `Accepted` and `ResolvedRefs` True for the current generation. Their
  reasons say why not: NotAllowedByListeners, NoMatchingParent (Accepted); BackendNotFound,
  RefNotPermitted, InvalidKind (ResolvedRefs), quoted in the problem.
- A weighted split is observed within a tolerance: each backend's share of the requests against
  its weight over the weights' sum (HTTPBackendRef.Weight: "proportional", default 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]

GROUP = "gateway.networking.k8s.io"


def _conditions(status: Obj | None) -> dict[str, Obj]:
    return {c.get("type", ""): c for c in (status or {}).get("conditions") or []}


def _condition_problem(what: str, conditions: Mapping[str, Obj], kind: str, generation: int | None) -> str | None:
    c = conditions.get(kind)
    if c is None:
        return f"{what} has no {kind} condition yet"
    if generation is not None and int(c.get("observedGeneration") or 0) < generation:
        return (f"{what}'s {kind} condition is for generation {c.get('observedGeneration') or 0}, "
                f"the spec is at {generation} (not reconciled yet)")
    if c.get("status") != "True":
        return f"{what} is not {kind}: {c.get('reason') or 'no reason'}: {c.get('message') or 'no message'}"
    return None


def gateway_class_problems(gateway_class: Obj | None, name: str, controller: str) -> list[str]:
    """Why GatewayClass `name` does not belong to `controller` or is not Accepted by it."""
    if gateway_class is None:
        return [f"GatewayClass {name} does not exist"]
    spec_controller = (gateway_class.get("spec") or {}).get("controllerName")
    if spec_controller != controller:
        return [f"GatewayClass {name} names controller {spec_controller!r}, not {controller!r}"]
    generation = (gateway_class.get("metadata") or {}).get("generation")
    problem = _condition_problem(f"GatewayClass {name}", _conditions(gateway_class.get("status")), "Accepted",
                                 int(generation) if generation is not None else None)
    return [problem] if problem else []


def gateway_problems(gateway: Obj | None, namespace: str, name: str) -> list[str]:
    """Every reason Gateway `namespace/name` is not accepted and programmed, listeners included."""
    what = f"Gateway {namespace}/{name}"
    if gateway is None:
        return [f"{what} does not exist"]
    generation = (gateway.get("metadata") or {}).get("generation")
    gen = int(generation) if generation is not None else None
    status = gateway.get("status") or {}
    conditions = _conditions(status)
    problems = [p for kind in ("Accepted", "Programmed") if (p := _condition_problem(what, conditions, kind, gen))]
    spec_listeners = [str(ls.get("name")) for ls in (gateway.get("spec") or {}).get("listeners") or []]
    seen = {str(ls.get("name")): ls for ls in status.get("listeners") or []}
    for listener in spec_listeners:
        if listener not in seen:
            problems.append(f"{what} listener {listener} has no status yet")
            continue
        lc = _conditions(seen[listener])
        if (p := _condition_problem(f"{what} listener {listener}", lc, "Programmed", None)) is not None:
            problems.append(p)
        if (c := lc.get("Conflicted")) is not None and c.get("status") == "True":
            problems.append(f"{what} listener {listener} is Conflicted: {c.get('reason')}: {c.get('message')}")
    return problems


def _same_parent(ref: Obj, route_namespace: str, namespace: str, name: str, section: str | None) -> bool:
    return (ref.get("group", GROUP) == GROUP and ref.get("kind", "Gateway") == "Gateway"
            and ref.get("name") == name and (ref.get("namespace") or route_namespace) == namespace
            and (section is None or ref.get("sectionName") == section))


def route_problems(route: Obj | None, kind: str, parent: tuple[str, str], controller: str,
                   section: str | None = None) -> list[str]:
    """Every reason route `kind` is not Accepted with ResolvedRefs on Gateway `parent` (namespace,
    name), by the entry `controller` wrote."""
    if route is None:
        return [f"{kind} does not exist"]
    meta = route.get("metadata") or {}
    route_ns = str(meta.get("namespace") or "default")
    what = f"{kind} {route_ns}/{meta.get('name')} on Gateway {parent[0]}/{parent[1]}"
    generation = meta.get("generation")
    gen = int(generation) if generation is not None else None
    entries = [p for p in (route.get("status") or {}).get("parents") or []
               if p.get("controllerName") == controller
               and _same_parent(p.get("parentRef") or {}, route_ns, parent[0], parent[1], section)]
    if not entries:
        return [f"{what}: {controller} has written no status for this parent yet (is the parentRef right, "
                "and the Gateway's class this controller's?)"]
    conditions = _conditions(entries[0])
    return [p for c in ("Accepted", "ResolvedRefs") if (p := _condition_problem(what, conditions, c, gen))]


def split_problem(counts: Mapping[str, int], weights: Mapping[str, int], tolerance: float) -> str | None:
    """Why the observed shares of `counts` (requests per backend) are not `weights`' proportions
    within `tolerance` (absolute share, 0.05 = five points); None when they are. A backend that
    answered but has no weight is a problem of its own."""
    total = sum(counts.values())
    if total == 0:
        return "no request was answered"
    weight_sum = sum(weights.values())
    if weight_sum <= 0:
        return "every weight is 0: the route sends nothing anywhere"
    problems: list[str] = []
    for backend in sorted(set(counts) | set(weights)):
        expected = weights.get(backend, 0) / weight_sum
        got = counts.get(backend, 0) / total
        if backend not in weights:
            problems.append(f"{backend} answered {counts[backend]} of {total} but has no weight in the route")
        elif abs(got - expected) > tolerance + 1e-9:  # inclusive: 15% is within 5 points of 20%
            problems.append(f"{backend} answered {got:.1%} of {total} requests, its weight asks {expected:.1%} "
                            f"(tolerance {tolerance:.0%})")
    return "; ".join(problems) or None

