"""The local control plane's component ports are drawn at random below the ephemeral range, never
left to kwokctl's downward scan from 32767 (tools/localcluster.py component_ports says why)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.helpers.tools import load_tool

lc = load_tool("localcluster")


def test_the_config_names_every_port_kwokctl_would_otherwise_scan_for() -> None:
    opts = json.loads(lc.kwokctl_config(Path("/bin"), apiserver_port=20001,
                                        ports=[20002, 20003, 20004, 20005, 20006]))["options"]
    # kwok v0.8.0 pkg/kwokctl/runtime/binary: cluster_setup.go scans for these four,
    # cluster_kube_{controller_manager,scheduler}.go for the other two.
    assert {k: opts[k] for k in ("kubeApiserverPort", "etcdPort", "etcdPeerPort", "kwokControllerPort",
                                 "kubeControllerManagerPort", "kubeSchedulerPort")} == {
        "kubeApiserverPort": 20001, "etcdPort": 20002, "etcdPeerPort": 20003,
        "kwokControllerPort": 20004, "kubeControllerManagerPort": 20005, "kubeSchedulerPort": 20006}


def test_two_draws_do_not_walk_the_same_sequence() -> None:
    first, second = lc.component_ports(6), lc.component_ports(6)
    assert len(set(first)) == 6 and all(p in lc.COMPONENT_PORTS for p in first)
    # kwokctl's scan gives two processes the same six ports every time; two random draws share
    # none with overwhelming odds (6*6/12768 expected overlaps).
    assert len(set(first) & set(second)) <= 1


def test_a_port_someone_listens_on_is_never_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        draws = iter([busy, busy, 21000, 21001])
        monkeypatch.setattr(lc.random, "choice", lambda _r: next(draws))
        assert lc.component_ports(2) == [21000, 21001]
