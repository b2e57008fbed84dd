"""Smoke case `allReduce`: NCCL's all-reduce across whole nodes over EFA (pure).

Settings facts (which pool, its floor, the Topology level) and the verdict on what all_reduce_perf
printed. The verdict reads the launcher's log: mpirun forwards every rank's stdout there, so it
holds nccl-tests' report and each rank's NCCL_DEBUG=INFO lines.

Formats, at the versions the pinned image bundles (components/tables/pins.py "nccl-tests"):
- nccl-tests v2.18.3 src/util.cu: writeDeviceReport prints one
  `#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s` line per rank;
  writeBenchmarkLinePreamble/Body print a row `size count type redop root` then, out-of-place and
  in-place, `time algbw busbw #wrong` (`#wrong` as %6g, `N/A` without -c); writeResultFooter
  prints `# Out of bounds values : <n> OK|FAILED` and `# Avg bus bandwidth    : <%g>`, the mean
  busbw over every row, both placements (src/common.cu BenchTime: bw[0] += busBw).
- NCCL v2.30.4-1 src/debug.cc: an INFO line is `<host>:<pid>:<tid> [<dev>] NCCL INFO <text>`;
  src/init.cc logs `Using network <name>` per communicator: `Socket` is the TCP fallback
  (src/transport/net_socket.cc), `IB` verbs (src/transport/net_ib/common.cc).
- aws-ofi-nccl v1.19.0: its plugin names itself `Libfabric` (`AWS Libfabric` when NCCL_NET asks
  for that name; src/nccl_ofi_interface_nvidia.cpp) and logs through NCCL with a `NET/OFI ` prefix
  (include/nccl_ofi_log.h): `NET/OFI Selected provider is <prov>, fabric is <fabric> (found <n>
  nics)` (src/nccl_ofi_net.cpp).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..facts.efa import efa_device_count, efa_enabled, efa_supported
from ..settings.facts import pool_gpus, topology_levels
from ..settings.model import NodePoolSettings, Settings

CASE = "all-reduce"
CONTAINER = "all-reduce"
HOP = "all-reduce"
HOP_RANKS = "all-reduce/ranks"
HOP_NETWORK = "all-reduce/nccl network"
HOP_RESULTS = "all-reduce/results"
HOP_BANDWIDTH = "all-reduce/bus bandwidth"
# NCCL network names that are the AWS OFI plugin (over EFA when its provider is efa).
OFI_NETWORKS = ("Libfabric", "AWS Libfabric")
EFA_PROVIDER = "efa"
EFA_RESOURCE = "vpc.amazonaws.com/efa"  # the EFA device plugin's extended resource


@dataclass(frozen=True)
class Floor:
    gbps: float  # GB/s of nccl-tests' busbw
    source: str


# Floors for `# Avg bus bandwidth` of the default sizes (-b 1G -e 2G -f 2: two sizes, both
# placements), 2 nodes. Each is 80% of what AWS published for the type at those sizes, rounded
# down: headroom for run-to-run spread and for N > 2 (ring busbw stays near flat as nodes grow).
# Published: aws-samples/awsome-distributed-training 0162aacd micro-benchmarks/nccl-tests/README.md
# "Results": 2x p4de.24xlarge 76.79 / 78.33 GB/s at 1 / 2 GiB; 2x p5.48xlarge 436.95 / 443.72.
_AWS_README = "aws-samples/awsome-distributed-training 0162aacd, micro-benchmarks/nccl-tests/README.md"
FLOORS: dict[str, Floor] = {
    "p4de.24xlarge": Floor(62.0, f"{_AWS_README}: 2x p4de.24xlarge, 77.6 GB/s mean at 1-2 GiB"),
    # Same network as p4de (4 EFA, 400 Gbps) and NVSwitch; the published figure is p4de's.
    "p4d.24xlarge": Floor(62.0, f"{_AWS_README}: 2x p4de.24xlarge (same 4x EFA network), 77.6 GB/s mean at 1-2 GiB"),
    "p5.48xlarge": Floor(352.0, f"{_AWS_README}: 2x p5.48xlarge, 440.3 GB/s mean at 1-2 GiB"),
}


# --- settings facts ---------------------------------------------------------------------------


def pool(settings: Settings) -> tuple[int, NodePoolSettings] | None:
    """(index, pool) the case runs on: smokeTest.allReduce.pool, else the first pool with EFA on,
    else the first whose type has EFA (the settings rules then name its `efa` field)."""
    wanted = settings.smoke_test.all_reduce.pool
    pools = list(enumerate(settings.node_pools))
    if wanted is not None:
        return next(((i, p) for i, p in pools if p.name == wanted), None)
    return next(((i, p) for i, p in pools if efa_enabled(p)),
                next(((i, p) for i, p in pools if efa_supported(p.instance_type)), None))


def floor(settings: Settings, instance_type: str) -> Floor | None:
    """minBusBandwidthGBps when set, else the type's published floor; None: neither."""
    own = settings.smoke_test.all_reduce.min_bus_bandwidth_gbps
    if own is not None:
        return Floor(own, "smokeTest.allReduce.minBusBandwidthGBps")
    return FLOORS.get(instance_type)


def topology_label(settings: Settings) -> str | None:
    """The node label of the Topology level topologyLevel names (by alias or label); None: no such level.
    KAI's TopologyConstraint takes the level as its node label (v0.17.0 podgroup_types.go)."""
    want = settings.smoke_test.all_reduce.topology_level
    for level in topology_levels(settings):
        if want in (level.alias, level.node_label):
            return level.node_label
    return None


def size_bytes(size: str) -> int:
    """nccl-tests' size syntax (settings NCCL_SIZE) in bytes: K, M, G are powers of 1024."""
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)


@dataclass(frozen=True)
class NodeShape:
    instance_type: str
    gpus: int
    efa: int


def node_shape(p: NodePoolSettings) -> NodeShape | None:
    facts = pool_gpus(p)
    if facts is None:
        return None
    try:
        efa = efa_device_count(p.instance_type)
    except ValueError:
        efa = 0
    return NodeShape(p.instance_type, facts.count, efa)


# --- nccl-tests output ------------------------------------------------------------------------

_RANK = re.compile(r"#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
                   r"\[([0-9a-fA-Fx:]+)\]\s+(.*?)\s*$")
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_BODY = rf"\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM}|N/A)"
_ROW = re.compile(rf"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+){_BODY}{_BODY}")
_AVG = re.compile(rf"#\s*Avg bus bandwidth\s*:\s*({_NUM})")
_OOB = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)")
_NETWORK = re.compile(r"(\S+?):\d+:\d+ \[\d+\] NCCL INFO Using network (.+?)\s*$")
_PROVIDER = re.compile(r"(\S+?):\d+:\d+ \[\d+\] NCCL INFO NET/OFI Selected provider is ([^,\s]+)")
_WARN = re.compile(r"NCCL WARN (.*?)\s*$")
# mpirun --tag-output / --output-filename prefixes (Open MPI 4: `[<job>,<rank>]<stdout>:`).
_TAG = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:\s?")


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str
    device: int
    gpu: str


@dataclass(frozen=True)
class Row:
    size: int
    wrong_out: float | None  # None: N/A (no data check)
    wrong_in: float | None
    busbw_out: float
    busbw_in: float


@dataclass
class Report:
    started: bool = False  # nccl-tests' header ("# Collective test starting")
    ranks: list[Rank] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw: float | None = None  # None: the run never concluded
    networks: dict[str, set[str]] = field(default_factory=dict)  # host -> `Using network` names
    providers: dict[str, set[str]] = field(default_factory=dict)  # host -> OFI providers
    warnings: list[str] = field(default_factory=list)


def parse(text: str) -> Report:
    """What all_reduce_perf (and NCCL under it) printed; mpirun's --tag-output prefix is dropped."""
    out = Report()
    for raw in text.splitlines():
        line = _TAG.sub("", raw.rstrip("\r"))
        if "# Collective test starting" in line:
            out.started = True
        if m := _RANK.search(line):
            out.ranks.append(Rank(int(m[1]), m[4], int(m[5]), m[7]))
        elif m := _NETWORK.search(line):
            out.networks.setdefault(m[1], set()).add(m[2])
        elif m := _PROVIDER.search(line):
            out.providers.setdefault(m[1], set()).add(m[2])
        elif m := _WARN.search(line):
            out.warnings.append(m[1])
        elif m := _AVG.search(line):
            out.avg_busbw = float(m[1])
        elif m := _OOB.search(line):
            out.out_of_bounds = int(m[1])
        elif not line.lstrip().startswith("#") and (m := _ROW.search(line)):
            out.rows.append(Row(int(m[1]), None if m[9] == "N/A" else float(m[9]),
                                None if m[13] == "N/A" else float(m[13]), float(m[8]), float(m[12])))
    return out


# --- the verdict ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    problems: tuple[tuple[str, str], ...]  # (hop, problem), hops in order
    summary: str  # what passed, when nothing failed


def _ranks(r: Report, nodes: int, gpus: int) -> list[str]:
    want = nodes * gpus
    seen = sorted({x.rank for x in r.ranks})
    problems = []
    missing = sorted(set(range(want)) - set(seen))
    if missing:
        shown = ", ".join(map(str, missing[:16])) + (" ..." if len(missing) > 16 else "")
        problems.append(f"{len(seen)} of {want} ranks reported ({nodes} node(s) x {gpus} GPU(s)); missing rank(s) "
                        f"{shown}")
    hosts: dict[str, int] = {}
    for x in r.ranks:
        hosts[x.host] = hosts.get(x.host, 0) + 1
    if len(hosts) != nodes:
        problems.append(f"ranks ran on {len(hosts)} host(s) ({', '.join(sorted(hosts)) or 'none'}), expected {nodes}")
    uneven = sorted(f"{h} {n}" for h, n in hosts.items() if n != gpus)
    if uneven and not missing:
        problems.append(f"expected {gpus} rank(s) per host, got {', '.join(uneven)}")
    return problems


def _network(r: Report) -> list[str]:
    if not r.networks:
        return ["no 'NCCL INFO Using network' line in the log: NCCL_DEBUG=INFO did not reach the ranks, or no "
                "communicator was made"]
    problems = []
    for host, names in sorted(r.networks.items()):
        if "Socket" in names:
            problems.append(f"NCCL on {host} fell back to sockets (Using network Socket): the AWS OFI plugin did not "
                            "load or found no EFA device (vpc.amazonaws.com/efa, /dev/infiniband in the pod)")
        elif not names & set(OFI_NETWORKS):
            problems.append(f"NCCL on {host} used network {', '.join(sorted(names))}, not the AWS OFI plugin "
                            f"({' / '.join(OFI_NETWORKS)})")
    for host, provs in sorted(r.providers.items()):
        if provs - {EFA_PROVIDER}:
            problems.append(f"the OFI plugin on {host} selected provider {', '.join(sorted(provs))}, "
                            f"not {EFA_PROVIDER}")
    ofi_hosts = {h for h, n in r.networks.items() if n & set(OFI_NETWORKS)}
    if ofi_hosts and not (ofi_hosts & set(r.providers)):
        problems.append("the OFI plugin logged no 'Selected provider is efa': EFA was not confirmed")
    return problems


def _results(r: Report) -> list[str]:
    if not r.rows:
        return ["no result row: all_reduce_perf printed no measurement"]
    problems = []
    wrong = [row for row in r.rows if (row.wrong_out or 0) > 0 or (row.wrong_in or 0) > 0]
    for row in wrong:
        problems.append(f"{row.size} B: {row.wrong_out:g} wrong element(s) out-of-place, {row.wrong_in:g} in-place")
    if any(row.wrong_out is None or row.wrong_in is None for row in r.rows):
        problems.append("results were not checked (#wrong N/A): run with -c 1")
    if r.out_of_bounds is None and r.avg_busbw is None:
        problems.append("all_reduce_perf did not conclude: no '# Out of bounds values' / '# Avg bus bandwidth' line")
    elif r.out_of_bounds and not wrong:
        problems.append(f"nccl-tests reports {r.out_of_bounds} out-of-bounds value(s)")
    return problems


def _bandwidth(r: Report, floor_gbps: float, source: str) -> list[str]:
    if r.avg_busbw is None:
        return ["no '# Avg bus bandwidth' line: the run did not conclude"]
    if r.avg_busbw < floor_gbps:
        return [f"average bus bandwidth {r.avg_busbw:g} GB/s is under the floor {floor_gbps:g} GB/s ({source})"]
    return []


def verdict(text: str | None, *, nodes: int, gpus: int, floor_gbps: float, source: str) -> Verdict:
    """Every problem of one run, each with its hop: ranks, network, results, bandwidth."""
    if text is None:
        return Verdict(((HOP_RANKS, "no launcher log holds nccl-tests' report"),), "")
    r = parse(text)
    if not r.started and not r.ranks:
        tail = " | ".join(line for line in text.strip().splitlines()[-3:]) or "empty log"
        return Verdict(((HOP_RANKS, f"all_reduce_perf never started: {tail}"),), "")
    problems = [(HOP_RANKS, p) for p in _ranks(r, nodes, gpus)]
    problems += [(HOP_NETWORK, p) for p in _network(r)]
    problems += [(HOP_RESULTS, p) for p in _results(r)]
    problems += [(HOP_BANDWIDTH, p) for p in _bandwidth(r, floor_gbps, source)]
    if problems:
        return Verdict(tuple(problems), "")
    networks = sorted({n for names in r.networks.values() for n in names})
    summary = (f"{len(r.ranks)} ranks on {nodes} node(s) over {'/'.join(networks)} ({EFA_PROVIDER}), no wrong "
               f"result, average bus bandwidth {r.avg_busbw:g} GB/s >= {floor_gbps:g}")
    return Verdict((), summary)


def report_log(logs: dict[str, str], pods: list[str]) -> str | None:
    """The log with nccl-tests' report: the launcher's (index 0), found by its content, so a
    renamed or re-indexed pod does not hide it."""
    for pod in pods:
        text = logs.get(f"{pod}/{CONTAINER}")
        if text is not None and ("# Collective test starting" in text or "#  Rank" in text):
            return text
    return None
