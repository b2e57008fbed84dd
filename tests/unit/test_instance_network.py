"""The network facts of the GPU table (components/tables/instance_types.py), held against the rules AWS
documents for them, and the rows a multi-node training pool is planned from."""

from __future__ import annotations

import pytest

from components.tables.instance_types import GPU_INSTANCE_TYPES, gpu_facts


def test_every_row_has_network_facts_that_obey_aws_rules() -> None:
    for name, f in GPU_INSTANCE_TYPES.items():
        n = f.network
        assert n is not None, name
        assert 1 <= n.network_cards <= n.max_interfaces, name
        # [EFA]: one EFA per network card; single-card types only one EFA per instance.
        assert n.efa_interfaces <= n.network_cards, name
        assert n.efa == (n.efa_interfaces > 0), name
        assert (n.interconnect == "single") == (f.count == 1), name


@pytest.mark.parametrize(("itype", "efa", "cards", "interfaces", "gbps"), [
    ("p5.48xlarge", 32, 32, 64, 3200),     # [EFA-ACC] P5: ENA primary + 32 EFA-only
    ("p5e.48xlarge", 32, 32, 64, 3200),
    ("p5en.48xlarge", 16, 16, 64, 3200),
    ("p6-b200.48xlarge", 8, 8, 32, 3200),  # [EFA-ACC] P6-B200: 8 cards, 8 EFA-only
    ("p6e-gb200.36xlarge", 4, 17, 39, 3200),  # [EFA-ACC] P6e-GB200: EFA-only on NCIs 1, 5, 9, 13
    ("p4d.24xlarge", 4, 4, 60, 400),
    ("p5.4xlarge", 1, 1, 4, 100),          # [EFA] lists p5.4xlarge; one card
    ("g6e.48xlarge", 4, 4, 40, 400),
    ("g6.12xlarge", 1, 1, 8, 40),
    ("g6.xlarge", 0, 1, 4, 2.5),           # no EFA below 8xlarge
    ("g4dn.4xlarge", 0, 1, 3, 20),
])
def test_training_rows(itype: str, efa: int, cards: int, interfaces: int, gbps: float) -> None:
    f = gpu_facts(itype)
    assert f is not None and f.network is not None
    n = f.network
    assert (n.efa_interfaces, n.network_cards, n.max_interfaces, n.bandwidth_gbps) == (efa, cards, interfaces, gbps)


def test_interconnects_and_cpu_architectures() -> None:
    links = {t: f.network.interconnect for t, f in GPU_INSTANCE_TYPES.items() if f.network}
    assert {links[t] for t in ("p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge")} == {"nvswitch"}
    assert links["p6e-gb200.36xlarge"] == "nvlink-multinode"
    assert links["g6e.48xlarge"] == links["g5.48xlarge"] == "pcie"
    gb200 = gpu_facts("p6e-gb200.36xlarge")
    assert gb200 is not None and (gb200.cpu_arch, gb200.count, gb200.vcpus) == ("arm64", 4, 144)
    assert {f.cpu_arch for t, f in GPU_INSTANCE_TYPES.items() if not t.startswith("p6e-")} == {"amd64"}
