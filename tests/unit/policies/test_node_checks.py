"""The node suite's checks (tests/node/checks.py) over recorded command outputs.

A fake testinfra backend answers each exact command with a recorded (rc, stdout) and fails the
test on any command it was not given, so the checks are exercised through testinfra's real
Host.run / CommandResult and the commands they issue are pinned down too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import testinfra.host
from testinfra.backend.base import BaseBackend, CommandResult

from components.validate import parse as parse_settings
from tests.node import checks
from tests.node.checks import Expectations, Node

OUT = Path(__file__).parent / "node_outputs"
NODE = "ip-10-20-1-23.eu-west-1.compute.internal"
NODE_JSON = f"{checks.KUBECTL} get node {NODE} -o json"
DCGM_POD = (f"{checks.KUBECTL} get pods -n gpu-operator -l app=nvidia-dcgm-exporter "
            f"--field-selector spec.nodeName={NODE} -o jsonpath='{{.items[0].status.podIP}}'")
MISSING = (1, "")


def recorded(name: str) -> tuple[int, str]:
    return 0, (OUT / name).read_text()


class RecordedBackend(BaseBackend):
    """Answers commands from a table; an unexpected command is a test failure."""

    NAME = "recorded"

    def __init__(self, outputs: dict[str, tuple[int, str]]) -> None:
        super().__init__("gpu-node")
        self.outputs = outputs
        self.calls: list[str] = []

    def run(self, command: str, *args: str, **kwargs: Any) -> CommandResult:
        cmd = self.get_command(command, *args)
        self.calls.append(cmd)
        if cmd not in self.outputs:
            raise AssertionError(f"unexpected command on the node: {cmd}")
        rc, stdout = self.outputs[cmd]
        return self.result(rc, self.encode(cmd), stdout, "")


HEALTHY_GPU_NODE: dict[str, tuple[int, str]] = {
    checks.SNAP_INFO: recorded("snap-k8s.json"),
    checks.SNAP_SERVICES: recorded("services-worker.json"),
    checks.KUBELET_ARGS: recorded("kubelet-args.txt"),
    NODE_JSON: recorded("node-ready.json"),
    checks.PCI: recorded("pci-g6-12xlarge.txt"),
    checks.DROP_IN: recorded("99-nvidia.toml"),
    checks.ROOT_CONFIG: recorded("containerd-config.toml"),
    checks.CDI_KINDS: recorded("cdi-kinds.txt"),
    checks.MODULES: recorded("proc-modules.txt"),
    checks.NVIDIA_SMI: recorded("nvidia-smi-4xL4.csv"),
    checks.DCGM_LOCAL: MISSING,  # the operator's exporter is not on the host network
    DCGM_POD: (0, "10.1.3.17"),
    "curl -sf --max-time 5 http://10.1.3.17:9400/metrics": recorded("dcgm-metrics.txt"),
}
L4_POOL = Expectations(track="1.34-classic", hold_refresh=True, gpus=4, product_name="NVIDIA L4", cdi=True)


def node(outputs: dict[str, tuple[int, str]], chroot: str | None = None) -> tuple[Node, RecordedBackend]:
    backend = RecordedBackend(outputs)
    return Node(testinfra.host.Host(backend), chroot), backend


def with_(**changes: tuple[int, str]) -> dict[str, tuple[int, str]]:
    names = {"snap": checks.SNAP_INFO, "services": checks.SNAP_SERVICES, "node_json": NODE_JSON, "pci": checks.PCI,
             "drop_in": checks.DROP_IN, "root": checks.ROOT_CONFIG, "cdi": checks.CDI_KINDS,
             "modules": checks.MODULES, "smi": checks.NVIDIA_SMI, "dcgm_local": checks.DCGM_LOCAL,
             "dcgm_pod": DCGM_POD}
    return {**HEALTHY_GPU_NODE, **{names[k]: v for k, v in changes.items()}}


ALL_CHECKS = (
    lambda n: checks.check_snap(n, L4_POOL),
    checks.check_services,
    checks.check_node_ready,
    checks.check_containerd_nvidia,
    lambda n: checks.check_cdi(n, L4_POOL),
    checks.check_kernel_modules,
    lambda n: checks.check_nvidia_smi(n, L4_POOL),
    lambda n: checks.check_dcgm_exporter(n, L4_POOL),
)


def test_a_healthy_gpu_node_passes_every_check() -> None:
    n, backend = node(HEALTHY_GPU_NODE)
    verdicts = [check(n) for check in ALL_CHECKS]
    assert [str(v) for v in verdicts if not v.ok] == []
    assert set(backend.calls) == set(HEALTHY_GPU_NODE)  # every recorded command was needed


def test_snap_track_hold_and_presence() -> None:
    moved = json.loads((OUT / "snap-k8s.json").read_text())
    moved["result"].update({"tracking-channel": "1.35-classic/stable"})
    del moved["result"]["hold"]
    v = checks.check_snap(node(with_(snap=(0, json.dumps(moved))))[0], L4_POOL)
    assert v.problems == ["tracking 1.35-classic/stable, expected track 1.34-classic",
                          "refreshes are not held (`snap refresh --hold k8s`): the snap may upgrade itself"]
    missing = checks.check_snap(node(with_(snap=recorded("snap-missing.json")))[0], L4_POOL)
    assert missing.problems == ["snap k8s is not installed (snapd has no such snap)"]
    assert checks.check_snap(node(with_(snap=(7, "")))[0], Expectations()).problems  # snapd unreachable


def test_stopped_services_are_reported() -> None:
    doc = json.loads((OUT / "services-worker.json").read_text())
    for app in doc["result"]:
        if app["name"] in ("kubelet", "kube-proxy"):
            app["active"] = False
    v = checks.check_services(node(with_(services=(0, json.dumps(doc))))[0])
    assert v.problems == ["k8s.kubelet is enabled and inactive; it must run on every node",
                          "k8s.kube-proxy is enabled but not running"]


def test_node_not_ready_or_not_registered() -> None:
    v = checks.check_node_ready(node(with_(node_json=recorded("node-notready.json")))[0])
    assert v.problems == [f"node {NODE} is not Ready: KubeletNotReady container runtime network not ready: "
                          "NetworkReady=false", f"node {NODE} reports DiskPressure"]
    v = checks.check_node_ready(node(with_(node_json=(1, "")))[0])
    assert "is not registered" in v.problems[0]


def test_node_name_falls_back_to_the_hostname() -> None:
    outputs = with_()
    outputs[checks.KUBELET_ARGS] = (0, "--kubeconfig=/etc/kubernetes/kubelet.conf\n")
    outputs[checks.HOSTNAME] = (0, "gpu-1\n")
    outputs[f"{checks.KUBECTL} get node gpu-1 -o json"] = recorded("node-ready.json")
    assert checks.check_node_ready(node(outputs)[0]).ok


def test_containerd_drop_in_missing_or_not_imported() -> None:
    v = checks.check_containerd_nvidia(node(with_(drop_in=MISSING))[0])
    assert v.problems == ["/etc/containerd/conf.d/99-nvidia.toml is missing: the container toolkit has not "
                          "configured containerd"]
    v = checks.check_containerd_nvidia(node(with_(root=(0, "version = 2\n")))[0])
    assert v.problems == ["/etc/containerd/config.toml does not import conf.d/*.toml: the drop-in is ignored"]
    v = checks.check_containerd_nvidia(node(with_(drop_in=(0, "version = 2\n")))[0])
    assert "defines no `nvidia` runtime" in v.problems[0]


def test_cdi_specs_and_tracks_without_cdi() -> None:
    assert checks.check_cdi(node(with_(cdi=(0, "kind: example.com/fpga\n")))[0], L4_POOL).problems
    assert checks.check_cdi(node(with_(cdi=MISSING))[0], L4_POOL).problems
    json_spec = (0, '  "kind": "nvidia.com/gpu",\n')
    assert checks.check_cdi(node(with_(cdi=json_spec))[0], L4_POOL).ok
    old = Expectations(track="1.32-classic", cdi=False)
    assert "cannot do CDI" in (checks.check_cdi(node(with_(cdi=MISSING))[0], old).skipped or "")


def test_kernel_modules() -> None:
    only_nvidia = (0, "nvidia 60796928 21 - Live 0x0 (POE)\noverlay 196608 12 - Live 0x0\n")
    assert checks.check_kernel_modules(node(with_(modules=only_nvidia))[0]).problems == [
        "kernel module nvidia_uvm is not loaded"
    ]


def test_nvidia_smi_counts_and_models() -> None:
    three = (0, "\n".join((OUT / "nvidia-smi-4xL4.csv").read_text().splitlines()[:3]))
    assert checks.check_nvidia_smi(node(with_(smi=three))[0], L4_POOL).problems == [
        "nvidia-smi lists 3 GPU(s), expected 4"
    ]
    a10g = Expectations(gpus=4, product_name="NVIDIA A10G")
    assert checks.check_nvidia_smi(node(with_())[0], a10g).problems == ["GPU model NVIDIA L4, expected NVIDIA A10G"]
    assert "nvidia-smi failed" in checks.check_nvidia_smi(node(with_(smi=(127, "")))[0], L4_POOL).problems[0]


def test_gpu_count_comes_from_the_instance_type_and_is_checked_against_the_pci_bus() -> None:
    # g6.12xlarge has 4 GPUs; a node that shows 8 on PCI is not what the pool promised.
    p5 = with_(pci=recorded("pci-p5-48xlarge.txt"))
    problems = checks.check_nvidia_smi(node(p5)[0], L4_POOL).problems
    assert "the instance type has 4 GPU(s) but the PCI bus shows 8" in problems
    # Without a pool, the PCI bus sets the count; NVSwitches (class 0x0680) are not GPUs.
    assert checks.pci_gpus(node(p5)[0]) == 8
    assert checks.check_nvidia_smi(node(with_())[0], Expectations()).ok


def test_dcgm_exporter_on_the_host_network_or_through_its_pod() -> None:
    metrics = recorded("dcgm-metrics.txt")
    host_network = {k: v for k, v in with_(dcgm_local=metrics).items() if "9400" not in k or k == checks.DCGM_LOCAL}
    n, backend = node(host_network)
    assert checks.check_dcgm_exporter(n, L4_POOL).ok
    assert DCGM_POD not in backend.calls
    assert "no nvidia-dcgm-exporter pod" in checks.check_dcgm_exporter(node(with_(dcgm_pod=(0, "")))[0],
                                                                         L4_POOL).problems[0]
    partial = with_()
    partial["curl -sf --max-time 5 http://10.1.3.17:9400/metrics"] = (0, "\n".join(
        metrics[1].splitlines()[:4]))
    assert checks.check_dcgm_exporter(node(partial)[0], L4_POOL).problems == [
        "DCGM_FI_DEV_GPU_UTIL covers 2 GPU(s) at 10.1.3.17:9400, expected 4"
    ]


def test_without_a_gpu_every_gpu_check_skips_with_a_reason() -> None:
    cpu = {checks.PCI: recorded("pci-cpu.txt")}  # nothing else may run on such a node
    n, backend = node(cpu)
    gpu_checks = ALL_CHECKS[3:]
    verdicts = [check(n) for check in gpu_checks]
    assert all(v.skipped == "no NVIDIA GPU on the PCI bus of this node (a control plane or CPU node)" for v in verdicts)
    assert set(backend.calls) == {checks.PCI}


def test_commands_run_through_a_chroot_for_debug_pods() -> None:
    wrapped = {f"chroot /host sh -c {checks.shlex.quote(checks.PCI)}": recorded("pci-cpu.txt")}
    n, backend = node(wrapped, chroot="/host")
    assert checks.check_kernel_modules(n).skipped
    assert backend.calls == list(wrapped)


def test_expectations_from_stack_settings() -> None:
    settings = parse_settings({
        "platform": "aws", "region": "eu-north-1", "kubernetes": {"track": "1.32-classic"},
        "gpuStack": {"allocation": "device-plugin"}, "nodePools": [{"name": "l4", "instanceType": "g6.12xlarge"}],
    })
    exp = checks.expectations_for(settings, "l4")
    assert (exp.track, exp.gpus, exp.product_name, exp.cdi, exp.hold_refresh) == (
        "1.32-classic", 4, "NVIDIA L4", False, True)
    assert checks.expectations_for(settings).gpus is None
    with pytest.raises(ValueError, match="no node pool 'h100'"):
        checks.expectations_for(settings, "h100")
