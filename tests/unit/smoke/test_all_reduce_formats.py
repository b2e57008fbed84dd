"""The all-reduce verdict, table-driven: logs in each upstream version's printf formats
(tests/unit/smoke/nccl_logs.py builds them; each row cites the upstream file:line it prints), the
look-alikes that must pass, and each failure with the words that name its real cause.

Versions: nccl-tests v2.18.3 (the pin, components/tables/pins.py "nccl-tests"), the two tags before
it (v2.18.2, v2.18.1), the two release lines before it (v2.17.5, v2.16.9: other row and header
spellings) and v2.19.2's per-iteration columns; NCCL v2.30.4-1 (pin), v2.30.3-1, v2.29.7-1;
aws-ofi-nccl v1.19.0 (pin), v1.18.0, v1.17.3 and the older `Selected Provider is` spellings.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from components.smoke import all_reduce
from tests.unit.smoke import nccl_logs as nl

P5 = all_reduce.FLOORS["p5.48xlarge"]
H0, H1 = nl.HOSTS
RANKS, NETWORK, RESULTS, BANDWIDTH = (all_reduce.HOP_RANKS, all_reduce.HOP_NETWORK, all_reduce.HOP_RESULTS,
                                      all_reduce.HOP_BANDWIDTH)
PIN = nl.Run()
PINNED = f"{nl.V2_18_3.cite('rank', 'names', 'preamble', 'body', 'oob', 'avg')}; {nl.NCCL_2_30_4.cite}; " \
         f"{nl.OFI_1_19_0.cite}"


@dataclass(frozen=True)
class Row:
    id: str
    text: str
    cite: str  # where upstream prints what this row's log holds
    hop: str | None = None  # None: the run passes
    says: tuple[str, ...] = ()  # each in that hop's messages: the real cause
    not_says: tuple[str, ...] = ()  # in no message: a cause it is not
    floor: float = P5.gbps


def _cut_row(text: str) -> str:
    """The last row printed up to its out-of-place `#wrong` (the job died there), no footer."""
    head, rows = text.split("#        (B)", 1)
    units, rest = rows.split("\n", 1)
    first = rest.split("\n", 1)[0]
    return head + "#        (B)" + units + "\n" + first[:first.index("     0  ") + 7] + "\n"


SLOW = (nl.Measured(1073741824, 268435456, (1.25e8, 0.01, 0.02), (1.31e8, 0.01, 0.02)),)
NAN_ROW = (nl.P5_ROWS[0], nl.Measured(2147483648, 536870912, (9074.50, 236.65, float("nan")),
                                      (9108.50, 235.77, 442.06)))
INF_ROW = (nl.Measured(1073741824, 268435456, (0.0, float("inf"), float("inf")), (4565.60, 235.18, 440.96)),
           nl.P5_ROWS[1])
WRONG = (nl.P5_ROWS[0], nl.Measured(2147483648, 536870912, (9074.50, 236.65, 443.72), (9108.50, 235.77, 442.06),
                                    (0, 5)))
NO_HEADER = "".join(line for line in nl.log(PIN).splitlines(keepends=True)
                    if not line.startswith(("#       size", "#        (B)", "#      ")))

ROWS = [
    # --- every version's spelling passes -----------------------------------------------------------
    Row("pinned v2.18.3, NCCL 2.30.4, ofi 1.19.0", nl.log(PIN), PINNED),
    Row("nccl-tests v2.18.2, NCCL 2.30.3, ofi 1.18.0",
        nl.log(PIN.but(tests=nl.V2_18_2, nccl=nl.NCCL_2_30_3, ofi=nl.OFI_1_18_0)),
        f"{nl.V2_18_2.cite('nthread', 'names', 'body', 'oob')}; {nl.NCCL_2_30_3.cite}; {nl.OFI_1_18_0.cite}"),
    Row("nccl-tests v2.18.1, NCCL 2.29.7, ofi 1.17.3",
        nl.log(PIN.but(tests=nl.V2_18_1, nccl=nl.NCCL_2_29_7, ofi=nl.OFI_1_17_3)),
        f"{nl.V2_18_1.cite('nthread', 'names', 'body', 'oob')}; {nl.NCCL_2_29_7.cite}; {nl.OFI_1_17_3.cite}"),
    Row("nccl-tests v2.17.5 (no timestamp column, literal footer)", nl.log(PIN.but(tests=nl.V2_17_5)),
        nl.V2_17_5.cite("names", "units", "body", "oob", "avg")),
    Row("nccl-tests v2.16.9 (%6.2f busbw, %5g #wrong, no version line)", nl.log(PIN.but(tests=nl.V2_16_9)),
        nl.V2_16_9.cite("starting", "names", "time", "body", "oob", "avg")),
    Row("-S 1: the timestamp column", nl.log(PIN.but(timestamps=True)), nl.V2_18_3.cite("names", "units", "stamp")),
    Row("-C 1: cputime columns", nl.log(PIN.but(cputime=True)), nl.V2_18_3.cite("names")),
    Row("-N 3: each size once per cycle", nl.log(PIN.but(cycles=3)),
        "nccl-tests v2.18.3 src/common.cu:738-747 (run_cycles), 699,1597 (the mean over every row)"),
    Row("-I 1: v2.19.2 per-iteration columns", nl.log(PIN.but(tests=nl.V2_19_2, per_iter=True)),
        nl.V2_19_2.cite("names", "units", "body", "iter") + "; src/common.cu:855-881"),
    Row("-I 1 -S 1: per-iteration columns then the timestamp", nl.log(PIN.but(tests=nl.V2_19_2, per_iter=True,
                                                                             timestamps=True)),
        nl.V2_19_2.cite("names", "iter", "stamp") + "; src/common.cu:883"),
    Row("ofi v1.13.2-aws: `Selected Provider is efa (found 32 nics)`", nl.log(PIN.but(ofi=nl.OFI_1_13_2)),
        nl.OFI_1_13_2.cite),
    Row("ofi v1.5.0-aws: `Selected Provider is efa`", nl.log(PIN.but(ofi=nl.OFI_1_5_0)), nl.OFI_1_5_0.cite),
    Row("NCCL_NET='AWS Libfabric' names the plugin so", nl.log(PIN.but(networks={H0: ("AWS Libfabric",),
                                                                                 H1: ("AWS Libfabric",)})),
        "aws-ofi-nccl v1.19.0 src/nccl_ofi_interface_nvidia.cpp:743-747"),
    # --- look-alikes that must pass -----------------------------------------------------------------
    Row("mpirun --tag-output prefixes", nl.log(PIN.but(mpi_tag=True)), "Open MPI 4 `[<job>,<rank>]<stdout>:`"),
    Row("blank lines and an unrelated NCCL WARN", nl.log(PIN.but(warn=True)),
        "NCCL v2.30.4-1 src/debug.cc:159,194,337,365,388, src/init.cc:607"),
    Row("NCCL_DEBUG_TIMESTAMP_LEVELS=INFO prefixes", nl.log(PIN.but(info_timestamps=True)),
        "NCCL v2.30.4-1 src/debug.cc:157-194,365"),
    Row("Bootstrap / NET/Socket / NET/IB INFO lines beside the OFI network", nl.log(PIN.but(lookalikes=True)),
        "NCCL v2.30.4-1 src/bootstrap.cc:135, src/transport/net_socket.cc:76, src/transport/net_ib/init.cc:407"),
    Row("short host names padded by %10s", nl.log(PIN.but(hosts=("node-a", "node-b"))), nl.V2_18_3.cite("rank")),
    Row("CRLF line ends", nl.log(PIN).replace("\n", "\r\n"), PINNED),
    Row("scientific notation: a 125 s time as %7.1e", nl.log(PIN.but(rows=SLOW)),
        nl.V2_18_3.cite("float", "body"), floor=0.01),
    # --- the network: every rank's host confirms OFI over efa ----------------------------------------
    Row("a host that logs no NCCL line", nl.log(PIN.but(quiet=(H1,))), PINNED, NETWORK,
        (f"NCCL on {H1} logged no 'Using network' line",)),
    Row("a host's NCCL lines under another host name", nl.log(PIN).replace(f"{H1}:", "gpu-node-7:"),
        "NCCL v2.30.4-1 src/debug.cc:239,377 (gethostname up to '.'); nccl-tests v2.18.3 src/common.h:193-204",
        NETWORK, (f"NCCL on {H1} logged no 'Using network' line", "network lines came from gpu-node-7")),
    Row("a host on sockets", nl.log(PIN.but(networks={H1: ("Socket",)})),
        "NCCL v2.30.4-1 src/transport/net_socket.cc:778, src/init.cc:481", NETWORK,
        (f"NCCL on {H1} fell back to sockets",), (H0,)),
    Row("one rank of a host on IB verbs", nl.log(PIN.but(networks={H1: ("Libfabric",) * 7 + ("IB",)})),
        "NCCL v2.30.4-1 src/transport/net_ib/common.cc:174, src/init.cc:481", NETWORK,
        (f"NCCL on {H1} used network IB",), (H0,)),
    Row("a host on IB verbs", nl.log(PIN.but(networks={H0: ("IB",)})),
        "NCCL v2.30.4-1 src/transport/net_ib/common.cc:174", NETWORK, (f"NCCL on {H0} used network IB",), (H1,)),
    Row("a host whose OFI plugin named no provider", nl.log(PIN.but(providers={H1: None})), PINNED, NETWORK,
        (f"the OFI plugin on {H1} logged no 'Selected provider is efa'",), (H0,)),
    Row("a host on the tcp provider", nl.log(PIN.but(providers={H0: "tcp"})), nl.OFI_1_19_0.cite, NETWORK,
        (f"the OFI plugin on {H0} selected provider tcp",)),
    # --- the report's format -------------------------------------------------------------------------
    Row("unknown layout: PR #388's #bitdiff columns", nl.log(PIN.but(bitwise=True)),
        "NVIDIA/nccl-tests PR #388 (3a3f1e8, unreleased) src/util.cu:518,797-801", RESULTS,
        ("unknown nccl-tests report format", "#bitdiff"), ("wrong element",)),
    Row("rows under no column header", NO_HEADER, nl.V2_18_3.cite("preamble", "body"), RESULTS,
        ("unknown nccl-tests report format", "no column header"), ("no result row",)),
    Row("a row cut short, no footer", _cut_row(nl.log(PIN)), nl.V2_18_3.cite("preamble", "body"), RESULTS,
        ("does not fit", "did not conclude")),
    # --- values ---------------------------------------------------------------------------------------
    Row("NaN average (%g of 0/0)", nl.log(PIN.but(avg="-nan")),
        nl.V2_18_3.cite("avg") + "; src/common.cu:1597", BANDWIDTH, ("average bus bandwidth is NaN",),
        ("did not conclude", "no '# Avg bus bandwidth' line")),
    Row("infinite average", nl.log(PIN.but(avg="inf")), nl.V2_18_3.cite("avg"), BANDWIDTH,
        ("average bus bandwidth is infinite",), ("did not conclude",)),
    Row("NaN busbw in a row (%6.2f)", nl.log(PIN.but(rows=NAN_ROW)), nl.V2_18_3.cite("float", "body"), RESULTS,
        ("2147483648 B out-of-place: busbw is NaN",)),
    Row("inf algbw/busbw in a v2.16.9 row (%6.2f)", nl.log(PIN.but(tests=nl.V2_16_9, rows=INF_ROW)),
        nl.V2_16_9.cite("body"), RESULTS, ("1073741824 B out-of-place: algbw is infinite",)),
    Row("wrong elements in the per-iteration layout", nl.log(PIN.but(tests=nl.V2_19_2, per_iter=True, rows=WRONG,
                                                                      oob=1)),
        nl.V2_19_2.cite("body", "iter", "oob"), RESULTS,
        ("2147483648 B: 0 wrong element(s) out-of-place, 5 in-place",)),
    Row("out-of-bounds values without a wrong row", nl.log(PIN.but(oob=2)), nl.V2_18_3.cite("oob"), RESULTS,
        ("nccl-tests reports 2 out-of-bounds value(s)",)),
    Row("-c 0 in v2.16.9: #wrong N/A", nl.log(PIN.but(tests=nl.V2_16_9, check=False)), nl.V2_16_9.cite("na"),
        RESULTS, ("results were not checked (#wrong N/A)",)),
    # --- ranks ---------------------------------------------------------------------------------------
    Row("a duplicated rank", nl.log(PIN.but(ranks=(*range(16), 3))), nl.V2_18_3.cite("rank"), RANKS,
        ("duplicated rank 3",), ("rank(s) per host",)),
    Row("a missing rank", nl.log(PIN.but(ranks=tuple(r for r in range(16) if r != 13))), nl.V2_18_3.cite("rank"),
        RANKS, ("15 of 16 ranks reported", "missing rank(s) 13")),
    Row("a rank beyond nodes x GPUs", nl.log(PIN.but(ranks=(*range(16), 16))), nl.V2_18_3.cite("rank"), RANKS,
        ("rank(s) 16 beyond",), ("rank(s) per host",)),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_the_verdict_reads_each_version_and_names_each_cause(row: Row) -> None:
    assert row.cite
    v = all_reduce.verdict(row.text, nodes=2, gpus=8, floor_gbps=row.floor, source="the floor")
    got = "\n".join(f"[{h}] {p}" for h, p in v.problems)
    if row.hop is None:
        assert v.problems == (), got
        return
    mine = "\n".join(p for h, p in v.problems if h == row.hop)
    for fragment in row.says:
        assert fragment in mine, got
    for fragment in row.not_says:
        assert fragment not in got, got
