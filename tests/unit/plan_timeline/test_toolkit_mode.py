"""The container toolkit on the path: the GPU Operator's toolkit DaemonSet (install, containerd
restart) or the node image's (gpuStack.toolkit host: nvidia-ctk before containerd's first start),
read from the operator's release values; the validator runs after it either way."""

from __future__ import annotations

from dataclasses import replace

from components.plan.artifacts import RELEASE, chart_name
from components.plan.durations import DURATIONS
from components.plan.mockengine import Recorded
from components.plan.operator_modes import toolkit_mode_of
from components.plan.run import Plan
from components.plan.timeline_docs import DOCS_NOW
from components.plan.timeline_of_plan import timeline_for_plan

from .conftest import planned
from .test_node_media import store_and_pulled


def operator_toolkit(plan: Plan) -> Plan:
    """The same plan with the GPU Operator installing the toolkit (gpuStack.toolkit operator)."""
    def swap(r: Recorded) -> Recorded:
        if r.type != RELEASE or chart_name(r) != "gpu-operator":
            return r
        values = dict(r.inputs["values"])
        assert values["toolkit"] == {"enabled": False}
        values["toolkit"] = {"enabled": True}
        return replace(r, inputs={**r.inputs, "values": values})
    return replace(plan, resources=[swap(r) for r in plan.resources])


def test_the_mode_comes_from_the_operator_values() -> None:
    assert toolkit_mode_of(planned("aws-dev").resources) == "host"
    assert toolkit_mode_of(operator_toolkit(planned("aws-dev")).resources) == "operator"
    assert toolkit_mode_of([]) == "operator"  # no operator release: nothing says the image has it


def test_a_host_toolkit_costs_no_rollout_and_the_validator_still_gates_the_policy() -> None:
    host = timeline_for_plan(planned("aws-dev"), now=DOCS_NOW)
    operator = timeline_for_plan(operator_toolkit(planned("aws-dev")), now=DOCS_NOW)
    by_key = {s.key: s for s in host.steps.values()}
    toolkit, validator = by_key["gpu-toolkit-host"], by_key["gpu-operator-validation-preloaded"]
    assert "gpu-toolkit" not in by_key
    assert toolkit.id in validator.deps and any(host.steps[d].key == "gpu-driver-host" for d in toolkit.deps)
    policy = next(s for s in host.steps.values() if s.name.endswith("cluster-policy-ready"))
    assert validator.id in policy.deps
    assert {"gpu-toolkit"} <= {s.key for s in operator.steps.values()}
    # the one difference on the path is the toolkit row
    saved = DURATIONS["gpu-toolkit"].high - DURATIONS["gpu-toolkit-host"].high
    assert operator.total[1] - host.total[1] == saved
    assert toolkit.id in host.path and validator.id in host.path


def test_the_validator_pulls_its_image_where_nodes_pull() -> None:
    pulled = timeline_for_plan(store_and_pulled(planned("aws-dev")), now=DOCS_NOW)
    keys = {s.key for s in pulled.steps.values()}
    assert "gpu-operator-validation" in keys and "gpu-operator-validation-preloaded" not in keys
    assert DURATIONS["gpu-operator-validation"].high > DURATIONS["gpu-operator-validation-preloaded"].high
