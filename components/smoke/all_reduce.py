"""Smoke case `allReduce`: NCCL's all-reduce across whole nodes over EFA (pure).

Settings facts (which pool, its floor, the Topology level) and the verdict on what all_reduce_perf
printed. The verdict reads the launcher's log: mpirun forwards every rank's stdout there, so it
holds nccl-tests' report and each rank's NCCL_DEBUG=INFO lines.

Formats read, at the pins (components/tables/pins.py "nccl-tests") and the versions before them
(tests/unit/smoke/nccl_logs.py prints each; tests/unit/smoke/test_all_reduce_formats.py judges them):
- nccl-tests v2.18.3, v2.18.2, v2.18.1 (src/util.cu, v2.18.3 lines): writeDeviceReport prints one
  `#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s` line per rank (:570);
  writeResultHeader the column header `size count type redop root`, then `time algbw busbw #wrong`
  per placement (`cputime` with -C 1) and `timestamp` with -S 1 (:629); writeBenchmarkLinePreamble/
  Body a row: `%12li  %12li  %8s  %6s  %6s` (:427), then per placement getFloatStr's time, algbw,
  busbw (%.2f/%.1f/%.0f by width, else %e: :457-467) and `#wrong` as %6g, `N/A` without -c
  (:483-485), then the -S 1 time (:491); -N repeats every size per cycle (src/common.cu:738-747).
  writeResultFooter prints `# Out of bounds values : <n> OK|FAILED` and `# Avg bus bandwidth    :
  <%g>` (:648-649), the mean busbw over every row, both placements (common.cu:699,1597).
- nccl-tests v2.17.5 (src/util.cu): the same rows; no timestamp column. v2.16.9 (src/common.cu):
  busbw as %6.2f, `#wrong` as %5g / %5s `N/A` (:582-584), no `# nccl-tests version` line.
- nccl-tests v2.19.2 -I 1 (src/util.cu:747-749, 572): `i_min i_max i_p99 i_cv%` after each
  placement's `#wrong`. Any other column header is an unknown format, named as such.
- NCCL v2.30.4-1 (v2.30.3-1, v2.29.7-1 alike) src/debug.cc: an INFO line is `[<timestamp>]
  <host>:<pid>:<tid> [<dev>] NCCL INFO <text>`, the timestamp only with NCCL_DEBUG_TIMESTAMP_LEVELS;
  src/init.cc:481 logs `Using network <name>` per communicator: `Socket` is the TCP fallback
  (src/transport/net_socket.cc:778), `IB` verbs (src/transport/net_ib/common.cc:174).
- aws-ofi-nccl v1.19.0 (v1.18.0, v1.17.3 alike): its plugin names itself `Libfabric` (`AWS Libfabric`
  when NCCL_NET asks for that name; src/nccl_ofi_interface_nvidia.cpp:743-747) and logs through NCCL
  with a `NET/OFI ` prefix (include/nccl_ofi_log.h:21-26): `NET/OFI Selected provider is <prov>,
  fabric is <fabric> (found <n> nics)` (src/nccl_ofi_net.cpp:594); before v1.14.0 `Selected Provider
  is <prov>` with or without `(found <n> nics)`.
"""

from __future__ import annotations

import math
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
# glibc's %g / %f print a NaN as `nan` or `-nan` and an infinity as `inf`: the footer's %g average
# (0/0 when no row was averaged) and rows printed with %6.2f (v2.16.9 common.cu:582; v2.18.3
# util.cu:461 for a NaN; v2.19.6 getFloatStr for both) can hold them, and they must not read as
# "no such line".
_NONFINITE = r"[-+]?(?i:nan|inf(?:inity)?)"
_VALUE = re.compile(rf"{_NUM}|{_NONFINITE}")
_AVG = re.compile(rf"#\s*Avg bus bandwidth\s*:\s*({_NUM}|{_NONFINITE})(?!\w)")
_OOB = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)")
_VERSION = re.compile(r"#\s*nccl-tests version (\S+)")
# A row starts alike in every version read (util.cu v2.18.3:426-427, common.cu v2.16.9:625-626:
# `%12li  %12li  %8s  %6s  %6s`, root as %6i): size count type redop root; the layout's cells follow.
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)((?:\s.*)?)$")
# -S 1 ends a row with `%21s` of strftime "%Y-%m-%d %H:%M:%S" (util.cu v2.18.3:47,491).
_STAMP = re.compile(r"\s\d{4}-\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}\s*$")
# NCCL's prefix (src/debug.cc, v2.30.4-1:337-391, v2.30.3-1 the same lines, v2.29.7-1:332-386): a
# strftime timestamp when NCCL_DEBUG_TIMESTAMP_LEVELS holds the level (WARN only by default, `[%F %T] `),
# then `<host>:<pid>:<tid> [<dev>] NCCL INFO `. The host may follow a timestamp with no space (a custom
# NCCL_DEBUG_TIMESTAMP_FORMAT), so it starts after a blank, a `]` or the line's start.
_INFO = r"(?:^|[\s\]])([^\s\[\]]+?):\d+:\d+ \[\d+\] NCCL INFO "
_NETWORK = re.compile(_INFO + r"Using network (.+?)\s*$")  # init.cc v2.30.4-1:481 (v2.29.7-1:457)
# aws-ofi-nccl logs through NCCL with a `NET/OFI ` prefix (include/nccl_ofi_log.h:21-26) in three
# spellings: `Selected provider is %s, fabric is %s (found %d nics)` v1.14.0 to v1.19.0 (v1.19.0
# src/nccl_ofi_net.cpp:594, v1.18.0 :577, v1.17.3 :565), `Selected Provider is %s (found %d nics)`
# v1.6.0 to v1.13.2-aws (src/nccl_ofi_net.c:608 there), `Selected Provider is %s` to v1.5.0-aws (:1460).
_PROVIDER = re.compile(_INFO + r"NET/OFI Selected [Pp]rovider is ([^,\s]+)")
_WARN = re.compile(r"NCCL WARN (.*?)\s*$")
# mpirun --tag-output / --output-filename prefixes (Open MPI 4: `[<job>,<rank>]<stdout>:`).
_TAG = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:\s?")

# The column headers this parser reads: size count type redop root, then one placement's columns
# twice (out-of-place, in-place), then `timestamp` with -S 1. `cputime` (-C 1) reads as `time`.
_LEAD = ("size", "count", "type", "redop", "root")
LAYOUTS: dict[tuple[str, ...], str] = {
    # common.cu v2.16.9:1167; util.cu v2.17.5:614, v2.18.1:628, v2.18.2:629, v2.18.3:629, v2.19.2:757
    ("time", "algbw", "busbw", "#wrong"): "time algbw busbw #wrong",
    # -I 1, util.cu v2.19.2:747-749: per-iteration statistics after each placement's #wrong
    ("time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"):
        "time algbw busbw #wrong i_min i_max i_p99 i_cv% (-I 1)",
}
_KNOWN = "size count type redop root, then per placement " + " | ".join(LAYOUTS.values())


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
    ranks: list[Rank] = field(default_factory=list)  # every rank line, duplicates included
    rows: list[Row] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw: float | None = None  # None: the run never concluded; NaN/inf as printed
    networks: dict[str, set[str]] = field(default_factory=dict)  # host -> `Using network` names
    providers: dict[str, set[str]] = field(default_factory=dict)  # host -> OFI providers
    warnings: list[str] = field(default_factory=list)
    version: str | None = None  # `# nccl-tests version` (v2.17.3 on)
    avg_text: str | None = None  # the average as printed (`-nan`, `inf`)
    formats: list[str] = field(default_factory=list)  # an unknown column header, rows that fit no header
    non_finite: list[str] = field(default_factory=list)  # row values that are NaN or infinite, named


def _is_header(comment: str) -> bool:
    names = comment.lstrip("#").split()
    return bool(names) and (names[0] == "size" or "busbw" in names)


def _layout(comment: str) -> tuple[str, ...] | None:
    """One placement's columns when `comment` is a column header this parser reads, else None."""
    names = ["time" if n == "cputime" else n for n in comment.lstrip("#").split()]
    if names[-1:] == ["timestamp"]:
        names = names[:-1]
    cells = names[len(_LEAD):]
    one = tuple(cells[: len(cells) // 2])
    if tuple(names[: len(_LEAD)]) != _LEAD or len(cells) % 2 or tuple(cells[len(one):]) != one:
        return None
    return one if one in LAYOUTS else None


def _nonfinite(x: float) -> str:
    return "NaN" if math.isnan(x) else "infinite"


def _row(out: Report, line: str, m: re.Match[str], columns: tuple[str, ...]) -> None:
    rest = m[6]
    if stamp := _STAMP.search(rest):
        rest = rest[: stamp.start()]
    cells = rest.split()
    fits = len(cells) == 2 * len(columns) and all(
        (name == "#wrong" and cell == "N/A") or _VALUE.fullmatch(cell)
        for name, cell in zip(columns * 2, cells, strict=True))
    if not fits:
        out.formats.append(f"a result row does not fit the column header ({len(cells)} cell(s) after root where it "
                           f"has {2 * len(columns)}: {' '.join(columns)}, twice): '{' '.join(line.split())}'")
        return
    size = int(m[1])
    values: dict[tuple[str, str], float | None] = {}
    for i, (name, cell) in enumerate(zip(columns * 2, cells, strict=True)):
        place = "out-of-place" if i < len(columns) else "in-place"
        value = None if cell == "N/A" else float(cell)
        if value is not None and not math.isfinite(value):
            out.non_finite.append(f"{size} B {place}: {name} is {_nonfinite(value)} ('{cell}')")
        values[place, name] = value
    busbw_out, busbw_in = values["out-of-place", "busbw"], values["in-place", "busbw"]
    assert busbw_out is not None and busbw_in is not None  # _VALUE matched: only #wrong may be N/A
    out.rows.append(Row(size, values["out-of-place", "#wrong"], values["in-place", "#wrong"], busbw_out, busbw_in))


def parse(text: str) -> Report:
    """What all_reduce_perf (and NCCL under it) printed; mpirun's --tag-output prefix is dropped.
    Rows are read by the column header above them; one this parser does not read, or rows under no
    header, land in `formats` rather than reading as no rows or as other columns."""
    out = Report()
    columns: tuple[str, ...] | None = None
    header: str | None = None
    for raw in text.splitlines():
        line = _TAG.sub("", raw.rstrip("\r"))
        body = line.strip()
        if "# Collective test starting" in line:
            out.started = True
        if m := _RANK.search(line):
            out.ranks.append(Rank(int(m[1]), m[4], int(m[5]), m[7]))
        elif body.startswith("#"):
            if m := _VERSION.match(body):
                out.version = m[1]
            elif m := _AVG.search(body):
                out.avg_busbw, out.avg_text = float(m[1]), m[1]
            elif m := _OOB.search(body):
                out.out_of_bounds = int(m[1])
            elif _is_header(body):
                header, columns = body, _layout(body)
                if columns is None:
                    version = f" (nccl-tests {out.version})" if out.version else ""
                    out.formats.append(f"unknown nccl-tests report format{version}: column header "
                                       f"'{' '.join(body.split())}' is none this parser reads ({_KNOWN}); its rows "
                                       "are not read")
        elif m := _NETWORK.search(line):
            out.networks.setdefault(m[1], set()).add(m[2])
        elif m := _PROVIDER.search(line):
            out.providers.setdefault(m[1], set()).add(m[2])
        elif m := _WARN.search(line):
            out.warnings.append(m[1])
        elif m := _ROW.match(line):
            if columns is not None:
                _row(out, line, m, columns)
            elif header is None and out.started:  # a row-like line before the report is not one
                header = ""  # say it once
                out.formats.append(f"unknown nccl-tests report format: a result row with no column header before "
                                   f"it: '{' '.join(body.split())}'")
    return out


# --- the verdict ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    problems: tuple[tuple[str, str], ...]  # (hop, problem), hops in order
    summary: str  # what passed, when nothing failed


def _listed(xs: list[int], most: int = 16) -> str:
    return ", ".join(map(str, xs[:most])) + (" ..." if len(xs) > most else "")


def _ranks(r: Report, nodes: int, gpus: int) -> list[str]:
    want = nodes * gpus
    lines: dict[int, list[Rank]] = {}
    for x in r.ranks:
        lines.setdefault(x.rank, []).append(x)
    problems = []
    duplicated = sorted(n for n, xs in lines.items() if len(xs) > 1)
    for n in duplicated[:8]:
        where = ", ".join(f"{x.host} device {x.device}" for x in lines[n])
        # nccl-tests prints one line per MPI rank (util.cu v2.18.3:570, gathered to rank 0 :582-589): a second
        # one is a second process with that rank, i.e. not one MPI job, or two runs in one log.
        problems.append(f"duplicated rank {n}: {len(lines[n])} '#  Rank {n:2d}' lines ({where}); the processes did "
                        "not join one MPI job, or the log holds more than one run")
    missing = sorted(set(range(want)) - set(lines))
    if missing:
        problems.append(f"{len(set(lines) & set(range(want)))} of {want} ranks reported ({nodes} node(s) x {gpus} "
                        f"GPU(s)); missing rank(s) {_listed(missing)}")
    beyond = sorted(n for n in lines if n >= want)
    if beyond:
        problems.append(f"rank(s) {_listed(beyond)} beyond the {want} expected ({nodes} node(s) x {gpus} GPU(s))")
    hosts: dict[str, set[int]] = {}
    for x in r.ranks:
        hosts.setdefault(x.host, set()).add(x.rank)
    if len(hosts) != nodes:
        problems.append(f"ranks ran on {len(hosts)} host(s) ({', '.join(sorted(hosts)) or 'none'}), expected {nodes}")
    uneven = sorted(f"{h} {len(n)}" for h, n in hosts.items() if len(n) != gpus)
    if uneven and not (missing or duplicated or beyond):
        problems.append(f"expected {gpus} rank(s) per host, got {', '.join(uneven)}")
    return problems


def _network(r: Report) -> list[str]:
    if not r.networks and not r.providers:
        return ["no 'NCCL INFO Using network' line in the log: NCCL_DEBUG=INFO did not reach the ranks, or no "
                "communicator was made"]
    # Every host a rank ran on must confirm OFI over efa itself: one host's lines say nothing of
    # another's (NCCL and nccl-tests both name a host by gethostname() up to its first '.').
    hosts = list(dict.fromkeys(x.host for x in r.ranks)) or sorted(r.networks)
    strays = sorted(set(r.networks) - set(hosts))
    ofi = set(OFI_NETWORKS)
    problems = []
    for host in hosts:
        names, provs = r.networks.get(host, set()), r.providers.get(host, set())
        if not names:
            elsewhere = f" (network lines came from {', '.join(strays)}, which printed no rank line)" if strays else ""
            problems.append(f"NCCL on {host} logged no 'Using network' line: its ranks never confirmed the network "
                            f"(NCCL_DEBUG=INFO did not reach them, or they made no communicator){elsewhere}")
            continue
        logged = ", ".join(sorted(names))
        if "Socket" in names:
            problems.append(f"NCCL on {host} fell back to sockets (Using network {logged}): the AWS OFI plugin did "
                            "not load or found no EFA device (vpc.amazonaws.com/efa, /dev/infiniband in the pod)")
        elif names - ofi:
            problems.append(f"NCCL on {host} used network {', '.join(sorted(names - ofi))} (Using network {logged}), "
                            f"not the AWS OFI plugin ({' / '.join(OFI_NETWORKS)})")
        elif not provs:
            problems.append(f"the OFI plugin on {host} logged no 'Selected provider is {EFA_PROVIDER}': EFA was not "
                            "confirmed there")
        if provs - {EFA_PROVIDER}:
            problems.append(f"the OFI plugin on {host} selected provider {', '.join(sorted(provs))}, "
                            f"not {EFA_PROVIDER}")
    return problems


def _results(r: Report) -> list[str]:
    problems = list(dict.fromkeys(r.formats))
    if not r.rows and not r.formats:
        problems.append("no result row: all_reduce_perf printed no measurement")
    problems += r.non_finite
    wrong = [row for row in r.rows if (row.wrong_out or 0) > 0 or (row.wrong_in or 0) > 0]
    for row in wrong:
        problems.append(f"{row.size} B: {row.wrong_out or 0:g} wrong element(s) out-of-place, {row.wrong_in or 0:g} "
                        "in-place")
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
    if not math.isfinite(r.avg_busbw):
        # The footer is the mean busbw over every row (common.cu v2.18.3:699,1597): NaN when no row
        # was averaged or a row's busbw was NaN, infinite when a row's was.
        return [f"average bus bandwidth is {_nonfinite(r.avg_busbw)} ('{r.avg_text}' in nccl-tests' footer), not a "
                "measurement"]
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
    version = f" (nccl-tests {r.version})" if r.version else ""
    summary = (f"{len(r.ranks)} ranks on {nodes} node(s) over {'/'.join(networks)} ({EFA_PROVIDER}), no wrong "
               f"result, average bus bandwidth {r.avg_busbw:g} GB/s >= {floor_gbps:g}{version}")
    return Verdict((), summary)


def report_log(logs: dict[str, str], pods: list[str]) -> str | None:
    """The log with nccl-tests' report: the launcher's (index 0), found by its content, so a
    renamed or re-indexed pod does not hide it."""
    for pod in pods:
        text = logs.get(f"{pod}/{CONTAINER}")
        if text is not None and ("# Collective test starting" in text or "#  Rank" in text):
            return text
    return None
