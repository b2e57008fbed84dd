"""all_reduce_perf launcher logs, built in the exact printf formats of each upstream version, for the
all-reduce format tables (tests/unit/smoke/test_all_reduce_formats.py).

Every format string here is the upstream one, at the tag and file:line named beside it (read from
the sources; no upstream code is copied). Python's `%` applies C's printf conversions (its `l`
length modifier is accepted and ignored), so `%12li`, `%6g` and `%*s` print as nccl-tests prints.

What each version prints, as read:
- nccl-tests v2.18.1 / v2.18.2 / v2.18.3 (src/util.cu): one layout; rows `size count type redop
  root` then, per placement, `time algbw busbw #wrong` (getFloatStr widths 7/6/6, `%6g` or `N/A`);
  the column header ends in `%*s` (the `timestamp` column with -S 1); the footer pads its labels
  with `%-20s`. v2.18.2 added `unalign: %d` to the nThread line.
- nccl-tests v2.17.5 (src/util.cu): the same rows; no timestamp column; literal footer labels.
- nccl-tests v2.16.9 (src/common.cu): rows print busbw with `%6.2f` and `#wrong` with `%5g`/`%5s`,
  the time with `%7.0f`/`%7.1f`/`%7.2f`; no `# nccl-tests version` line.
- nccl-tests v2.19.2 with -I 1 (src/util.cu): 4 per-iteration columns after each placement's
  `#wrong` (i_min i_max i_p99 i_cv%).
- NCCL v2.29.7-1 / v2.30.3-1 / v2.30.4-1 (src/debug.cc): `[<timestamp>] <host>:<pid>:<tid> [<dev>]
  NCCL INFO <text>`, the timestamp only for levels in NCCL_DEBUG_TIMESTAMP_LEVELS (default WARN,
  `[%F %T] `); WARNs start with a newline and add `<file>:<line>`.
- aws-ofi-nccl: `NET/OFI Selected provider is %s, fabric is %s (found %d nics)` from v1.14.0 to
  v1.19.0 (v1.17.3, v1.18.0, v1.19.0 src/nccl_ofi_net.cpp), `Selected Provider is %s (found %d
  nics)` v1.6.0 to v1.13.2-aws, `Selected Provider is %s` up to v1.5.0-aws (src/nccl_ofi_net.c).
"""

# ruff: noqa: UP031 (printf-style `%` on purpose: these are upstream's C format strings, verbatim)

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

HOSTS = ("gpu-smoke-test-all-reduce-40b6a1ba-0", "gpu-smoke-test-all-reduce-40b6a1ba-1")
GPU = "NVIDIA H100 80GB HBM3"
PCI_BUS = (0x53, 0x64, 0x75, 0x86, 0x97, 0xA8, 0xB9, 0xCA)
STAMP = "2026-04-13 13:37:21"  # strftime "%Y-%m-%d %H:%M:%S" (nccl-tests TIME_STRING_FORMAT, NCCL "[%F %T] ")


@dataclass(frozen=True)
class Measured:
    """One size of one run: (time us, algbw GB/s, busbw GB/s) per placement, #wrong per placement."""

    size: int
    count: int
    out: tuple[float, float, float]
    inp: tuple[float, float, float]
    wrong: tuple[int, int] = (0, 0)


# 2x p5.48xlarge at 1 and 2 GiB (the figures of tests/data/nccl/pass.log).
P5_ROWS = (Measured(1073741824, 268435456, (4607.60, 233.04, 436.95), (4565.60, 235.18, 440.96)),
           Measured(2147483648, 536870912, (9074.50, 236.65, 443.72), (9108.50, 235.77, 442.06)))


@dataclass(frozen=True)
class Tests:
    """One nccl-tests version's report formats, with the line of each in `file` at `tag`."""

    tag: str
    file: str
    lines: dict[str, int]
    version_line: bool  # `# nccl-tests version ...` (v2.17.3+)
    unalign: bool  # nThread line ends with `unalign: %d` (v2.18.2+)
    float_str: bool  # getFloatStr (v2.17.3+) rather than `%6.2f`
    header: str  # "v2.16" | "v2.17.3" | "v2.17.7" (the `%*s` timestamp column)
    padded_footer: bool  # `# %-20s : ...` (v2.17.7+)
    per_iter: bool = False  # -I 1 columns known (v2.19.2+)

    def cite(self, *what: str) -> str:
        return f"nccl-tests {self.tag} {self.file}:" + ",".join(str(self.lines[w]) for w in what)


_UTIL_18 = {"version": 516, "nthread": 518, "devices": 550, "rank": 570, "header": 627, "names": 629, "units": 631,
            "preamble": 427, "float": 457, "body": 483, "na": 485, "stamp": 491, "end": 441, "oob": 648, "avg": 649,
            "concluded": 651}
V2_18_3 = Tests("v2.18.3", "src/util.cu", _UTIL_18, True, True, True, "v2.17.7", True)
V2_18_2 = Tests("v2.18.2", "src/util.cu", _UTIL_18, True, True, True, "v2.17.7", True)
V2_18_1 = Tests("v2.18.1", "src/util.cu", {
    "version": 515, "nthread": 517, "devices": 549, "rank": 569, "header": 626, "names": 628, "units": 630,
    "preamble": 426, "float": 456, "body": 482, "na": 484, "stamp": 490, "end": 440, "oob": 647, "avg": 648,
    "concluded": 650}, True, False, True, "v2.17.7", True)
V2_17_5 = Tests("v2.17.5", "src/util.cu", {
    "version": 505, "nthread": 507, "devices": 538, "rank": 558, "header": 612, "names": 614, "units": 616,
    "preamble": 422, "float": 452, "body": 478, "na": 480, "end": 436, "oob": 633, "avg": 634, "concluded": 636},
    True, False, True, "v2.17.3", False)
V2_16_9 = Tests("v2.16.9", "src/common.cu", {
    "starting": 1010, "nthread": 1011, "devices": 1019, "rank": 1031, "header": 1165, "names": 1167, "units": 1169,
    "preamble": 626, "time": 573, "body": 582, "na": 584, "end": 629, "oob": 1265, "avg": 1266, "concluded": 1268},
    False, False, False, "v2.16", False)
V2_19_2 = Tests("v2.19.2", "src/util.cu", {
    "version": 626, "nthread": 628, "devices": 667, "rank": 687, "header": 744, "names": 747, "units": 751,
    "preamble": 456, "float": 486, "body": 512, "na": 514, "iter": 572, "stamp": 612, "end": 470, "oob": 777,
    "avg": 778, "concluded": 780}, True, True, True, "v2.17.7", True, per_iter=True)


@dataclass(frozen=True)
class Ofi:
    """An aws-ofi-nccl version's provider line (after NCCL's `NET/OFI ` prefix, include/nccl_ofi_log.h:21-26)."""

    tag: str
    cite: str
    provider: str  # % (provider, fabric, nics), trimmed to what the version prints


OFI_1_19_0 = Ofi("v1.19.0", "aws-ofi-nccl v1.19.0 src/nccl_ofi_net.cpp:594",
                 "Selected provider is %s, fabric is %s (found %d nics)")
OFI_1_18_0 = Ofi("v1.18.0", "aws-ofi-nccl v1.18.0 src/nccl_ofi_net.cpp:577",
                 "Selected provider is %s, fabric is %s (found %d nics)")
OFI_1_17_3 = Ofi("v1.17.3", "aws-ofi-nccl v1.17.3 src/nccl_ofi_net.cpp:565",
                 "Selected provider is %s, fabric is %s (found %d nics)")
OFI_1_13_2 = Ofi("v1.13.2-aws", "aws-ofi-nccl v1.13.2-aws src/nccl_ofi_net.c:608",
                 "Selected Provider is %s (found %d nics)")
OFI_1_5_0 = Ofi("v1.5.0-aws", "aws-ofi-nccl v1.5.0-aws src/nccl_ofi_net.c:1460", "Selected Provider is %s")


@dataclass(frozen=True)
class Nccl:
    """An NCCL version's debug prefix lines (src/debug.cc) and `Using network` (src/init.cc)."""

    tag: str
    cite: str


NCCL_2_30_4 = Nccl("v2.30.4-1", "NCCL v2.30.4-1 src/debug.cc:377,391 src/init.cc:481")
NCCL_2_30_3 = Nccl("v2.30.3-1", "NCCL v2.30.3-1 src/debug.cc:377,391 src/init.cc:481")
NCCL_2_29_7 = Nccl("v2.29.7-1", "NCCL v2.29.7-1 src/debug.cc:372,386 src/init.cc:457")


@dataclass(frozen=True)
class Run:
    """What one all_reduce_perf run printed; defaults: a healthy 2 x 8 run over EFA at the pins."""

    tests: Tests = V2_18_3
    nccl: Nccl = NCCL_2_30_4
    ofi: Ofi = OFI_1_19_0
    hosts: tuple[str, ...] = HOSTS
    gpus: int = 8
    rows: tuple[Measured, ...] = P5_ROWS
    check: bool = True  # -c 1: #wrong counted, else N/A
    cputime: bool = False  # -C 1
    timestamps: bool = False  # -S 1
    per_iter: bool = False  # -I 1
    bitwise: bool = False  # the `#bitdiff` column of NVIDIA/nccl-tests PR #388 (3a3f1e8, in no release)
    cycles: int = 1  # -N: every size printed once per cycle
    avg: str | None = None  # the footer's number as printed; None: %g of the mean busbw
    oob: int = 0
    ranks: tuple[int, ...] | None = None  # rank lines printed, in order; None: all
    # host -> the `Using network` name each of its ranks logs (cycled); absent: ("Libfabric",)
    networks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    providers: dict[str, str | None] = field(default_factory=dict)  # host -> provider; None: no line
    quiet: tuple[str, ...] = ()  # hosts whose ranks log no NCCL line at all
    info_timestamps: bool = False  # NCCL_DEBUG_TIMESTAMP_LEVELS=INFO
    warn: bool = False  # one unrelated NCCL WARN per host (a timestamp and a leading newline)
    lookalikes: bool = False  # INFO lines that mention Socket/IB/Using without being the network line
    mpi_tag: bool = False  # mpirun --tag-output (Open MPI `[<job>,<rank>]<stdout>:`)

    def but(self, **kw: Any) -> Run:
        return replace(self, **kw)


def float_str(value: float, width: int) -> str:
    """getFloatStr (util.cu v2.18.3:457-467): the integer digits pick %.2f, %.1f, %.0f, else %e.
    v2.18.3 never returns for inf (its digit count loops); v2.19.6 prints it with %.2f, as here."""
    if math.isinf(value):
        return "%*.2f" % (width, value)
    power, val = 0, 1
    while value >= val:
        power, val = power + 1, val * 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    return "%*.1e" % (width, value) if width >= 7 else "%*.0e" % (width, value)


def _time_v2_16(us: float) -> str:
    # common.cu v2.16.9:573-580
    return "%7.0f" % us if us >= 10000.0 else "%7.1f" % us if us >= 100.0 else "%7.2f" % us


def _placement(run: Run, m: Measured, inplace: bool) -> str:
    t, alg, bus = m.inp if inplace else m.out
    wrong = m.wrong[1] if inplace else m.wrong[0]
    v = run.tests
    if v.float_str:
        ts, algs, buss = float_str(t, 7), float_str(alg, 6), float_str(bus, 6)
        text = ("  %7s  %6s  %6s  %6g" % (ts, algs, buss, float(wrong)) if run.check
                else "  %7s  %6s  %6s    N/A" % (ts, algs, buss))
    else:
        text = ("  %7s  %6.2f  %6.2f  %5g" % (_time_v2_16(t), alg, bus, float(wrong)) if run.check
                else "  %7s  %6.2f  %6.2f  %5s" % (_time_v2_16(t), alg, bus, "N/A"))
    if run.bitwise:  # PR #388 3a3f1e8 src/util.cu:518
        text += "  %8g" % 0.0
    if run.per_iter:  # util.cu v2.19.2:572, after each placement's body (common.cu v2.19.2:855-881)
        text += "  %7s  %7s  %7s  %7s" % (float_str(t * 0.97, 7), float_str(t * 1.06, 7), float_str(t * 1.05, 7),
                                          float_str(0.61, 7))
    if inplace and run.timestamps:  # util.cu v2.18.3:491 (v2.19.2:612 after the per-iteration columns)
        text += "%21s" % STAMP
    return text


def _header(run: Run) -> list[str]:
    v, tm = run.tests, ("cputime" if run.cputime else "time")
    pad, label, unit = (19, "timestamp", "%Y-%m-%d %H:%M:%S") if run.timestamps else (0, "", "")
    out = ["#\n"]
    if run.bitwise:  # PR #388 3a3f1e8 src/util.cu:797-801
        out.append("# %10s  %12s  %8s  %6s  %6s               out-of-place + bitwise                           "
                   "in-place + bitwise          \n" % ("", "", "", "", ""))
        row = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %7s  %6s  %6s  %6s  %8s %*s\n"
        out.append(row % ("size", "count", "type", "redop", "root", tm, "algbw", "busbw", "#wrong", "#bitdiff", tm,
                          "algbw", "busbw", "#wrong", "#bitdiff", pad, label))
        out.append(row % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", "(us)", "(GB/s)",
                          "(GB/s)", "", "", pad, unit))
        return out
    if run.per_iter:  # util.cu v2.19.2:745-753
        out.append("# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                         "
                   "       in-place (+ per-iteration)\n" % ("", "", "", "", ""))
        row = "# %10s  %12s  %8s  %6s  %6s" + "  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s" * 2 + " %*s\n"
        out.append(row % ("size", "count", "type", "redop", "root", tm, "algbw", "busbw", "#wrong", "i_min", "i_max",
                          "i_p99", "i_cv%", tm, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", pad,
                          label))
        out.append(row % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)",
                          "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", pad, unit))
        return out
    out.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
               % ("", "", "", "", ""))
    names = ("size", "count", "type", "redop", "root", tm, "algbw", "busbw", "#wrong", tm, "algbw", "busbw", "#wrong")
    units = ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
    if v.header == "v2.16":  # common.cu v2.16.9:1167-1170
        out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n" % names)
        out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n" % units)
    elif v.header == "v2.17.3":  # util.cu v2.17.5:613-617
        out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n" % names)
        out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n" % units)
    else:  # util.cu v2.18.3:628-632
        row = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n"
        out.append(row % (*names, pad, label))
        out.append(row % (*units, pad, unit))
    return out


def _footer(run: Run) -> list[str]:
    busbw = [x for m in run.rows for x in (m.out[2], m.inp[2])] * run.cycles
    avg = run.avg if run.avg is not None else "%g" % (sum(busbw) / len(busbw))  # common.cu v2.18.3:699,1597
    state = "FAILED" if run.oob else "OK"
    if run.tests.padded_footer:  # util.cu v2.18.3:648-651, then finalizeFooter 726
        return ["# %-20s : %d %s\n" % ("Out of bounds values", run.oob, state),
                "# %-20s : %s %s\n" % ("Avg bus bandwidth", avg, ""), "#\n",
                "# Collective test concluded: %s\n" % "all_reduce_perf", "#\n"]
    return ["# Out of bounds values : %d %s\n" % (run.oob, state), "# Avg bus bandwidth    : %s %s\n" % (avg, ""),
            "#\n", "# Collective test concluded: %s\n" % "all_reduce_perf", "\n"]


def _nccl(run: Run, host: str, pid: int, dev: int, text: str) -> str:
    # NCCL src/debug.cc (v2.30.4-1:194,365 timestamp, 377 "%s:%d:%d ", 391 "[%d] NCCL INFO %s\n")
    stamp = "[%s] " % STAMP if run.info_timestamps else ""
    return "%s%s:%d:%d [%d] NCCL INFO %s\n" % (stamp, host, pid, pid, dev, text)


def _rank_info(run: Run, host: str, index: int, pid: int, dev: int) -> list[str]:
    names = run.networks.get(host, ("Libfabric",))
    network = names[index % len(names)]
    provider = run.providers.get(host, "efa")
    out: list[str] = []
    if run.lookalikes:
        # bootstrap.cc:135, net_socket.cc:76 and net_ib/init.cc:407 (v2.30.4-1): logged beside any network.
        out += [_nccl(run, host, pid, dev, "Bootstrap: Using eth0:10.0.%d.%d<0>" % (1 + index // 8, 17 + dev)),
                _nccl(run, host, pid, dev, "NET/IB : No device found."),
                _nccl(run, host, pid, dev, "NET/Socket : Using [0]eth0:10.0.%d.%d<0>" % (1 + index // 8, 17 + dev))]
    if network in ("Libfabric", "AWS Libfabric"):
        out.append(_nccl(run, host, pid, dev, "NET/Plugin: Loaded net plugin %s (v10)" % network))  # net_v10.cc:123
        out.append(_nccl(run, host, pid, dev, "NET/OFI Initializing aws-ofi-nccl 1.19.0"))  # nccl_ofi_net.cpp:148
        if provider is not None:
            fmt = run.ofi.provider
            args: tuple[Any, ...] = {3: (provider, provider, 32), 2: (provider, 32), 1: (provider,)}[fmt.count("%")]
            out.append(_nccl(run, host, pid, dev, "NET/OFI " + fmt % args))
    out.append(_nccl(run, host, pid, dev, "Using network %s" % network))  # init.cc:481
    if run.warn and dev == 0:
        # debug.cc v2.30.4-1:337 (leading newline), 159,194,365 ("[%F %T] " for WARN by default), 388; init.cc:607
        out.append("\n[%s] %s:%d:%d [%d] init.cc:607 NCCL WARN NCCL_WORK_FIFO_BYTES=%d is being ignored because it "
                   "is not a power of 2.\n" % (STAMP, host, pid, pid, dev, 3000000))
    return out


def log(run: Run = Run()) -> str:
    """The launcher's log of `run`: nccl-tests' report with every rank's NCCL lines after the rank lines."""
    v = run.tests
    assert not run.per_iter or v.per_iter, f"-I 1 is no option of nccl-tests {v.tag}"
    assert not run.timestamps or v.header == "v2.17.7", f"this fixture prints -S 1 as v2.17.7+ does, not {v.tag}"
    out: list[str] = []
    if v.version_line:
        out.append("# nccl-tests version %s nccl-headers=%d nccl-library=%d\n" % (v.tag[1:], 23004, 23004))
    out.append("# Collective test starting: %s\n" % "all_reduce_perf")
    base = ("# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: %d "
            "validation: %d graph: %d")
    args: tuple[Any, ...] = (1, 1, 1073741824, 2147483648, 2, "factor", 5, 20, 1, int(run.check), 0)
    out.append((base + " unalign: %d\n") % (*args, 0) if v.unalign else (base + "\n") % args)
    out += ["#\n", "# Using devices\n"]
    total = len(run.hosts) * run.gpus
    procs = [(r, run.hosts[r // run.gpus], r % run.gpus) for r in range(total)]
    for r in run.ranks if run.ranks is not None else range(total):
        _, host, dev = procs[r % total]
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n"
                   % (r, 0, 400 + r, host, dev, 0, PCI_BUS[dev % 8], 0, GPU))
    for r, host, dev in procs:
        if host not in run.quiet:
            out += _rank_info(run, host, r, 400 + r, dev)
    out += _header(run)
    for _ in range(run.cycles):
        for m in run.rows:
            # util.cu v2.18.3:426-427 ("%6i" root, then the preamble), :441 the row's end
            row = "%12li  %12li  %8s  %6s  %6s" % (m.size, m.count, "float", "sum", "%6i" % -1)
            out.append(row + _placement(run, m, False) + _placement(run, m, True) + "\n")
    out += _footer(run)
    text = "".join(out)
    if run.mpi_tag:
        text = "".join(f"[1,0]<stdout>:{line}\n" for line in text.split("\n")[:-1])
    return text
