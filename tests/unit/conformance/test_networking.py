"""high_performance_networking (components/conformance/networking.py): EFA nodes must advertise the
device plugin's resource, and a pod given one must see an InfiniBand verbs device."""

from __future__ import annotations

from typing import Any

from components.conformance import networking as net
from components.conformance.common import Context
from components.smoke.all_reduce import EFA_RESOURCE
from tests.unit.conformance.test_procedures import FakeApi


class EfaApi(FakeApi):
    def __init__(self, allocatable: dict[str, str]) -> None:
        super().__init__()
        self.nodes = [{"metadata": {"name": n}, "status": {"allocatable": {EFA_RESOURCE: c}}}
                      for n, c in allocatable.items()]
        self.logs_by_pod["efa-attach"] = "INFINIBAND uverbs0\nINFINIBAND uverbs1\ndone\n"

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[dict[str, Any]], str]:
        if kind == "Node":
            return (self.nodes if label_selector else []), "1"
        return super().list(api_version, kind, namespace, label_selector=label_selector)


def context(api: FakeApi) -> Context:
    return Context(api, "probe:1", "conf", 5.0, lambda _m: None)  # type: ignore[arg-type]


def test_no_efa_node_is_not_implemented_naming_the_setting() -> None:
    r = net.high_performance_networking(context(FakeApi()))
    assert (r.status, r.outcome) == ("Not Implemented", "skipped") and "nodePools[].efa" in r.notes


def test_advertised_and_attached_passes_and_names_the_devices() -> None:
    api = EfaApi({"p5-a": "32"})
    r = net.high_performance_networking(context(api))
    assert (r.status, r.outcome) == ("Partially Implemented", "passed") and "uverbs0, uverbs1" in r.notes
    limits = api.objects[("Pod", "efa-attach")]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {EFA_RESOURCE: "1"}


def test_an_efa_node_without_the_resource_or_a_pod_without_the_device_fails() -> None:
    r = net.high_performance_networking(context(EfaApi({"p5-a": "32", "p5-b": "0"})))
    assert (r.status, r.outcome) == ("Not Implemented", "failed") and "p5-b" in r.notes
    api = EfaApi({"p5-a": "32"})
    api.logs_by_pod["efa-attach"] = "done\n"
    r = net.high_performance_networking(context(api))
    assert r.outcome == "failed" and "no /dev/infiniband device" in r.notes
