#!/usr/bin/env python3
"""Measure pod start on a real kubelet node with the image preloaded and with a pull (issue 29).

    sudo .venv/bin/python scripts/bench_pod_start.py [--runs 5] [--crane PATH] [--write docs/benchmarks.md]

One node of the node tier (tools/nodetier.py: kubelet + containerd v2.2.9 + runc) beside the loopback
control plane (tools/localcluster.py), a loopback registry (`crane registry serve`, go-containerregistry
v0.22.1) and two images built here the way tools/probe_image.py builds the smoke probe: `small` (the
probe's root filesystem) and `large` (the same plus one 200 MiB file of random bytes), each a single
uncompressed layer unique to it (not shared with the pause image). For each size and run:

- pull: the image and its blobs and snapshot are gone from containerd, the pod names
  `localhost:<port>/ck8s-bench/<size>@sha256:...`, the kubelet pulls it (IfNotPresent);
- preloaded: the same image imported with `ctr images import` (as the side-load does), same pod.

Times, from a `kubectl get pods --watch` started before the pods: the pod's ADDED event -> the
container's first instruction (it prints `date +%s.%N`) and -> the event showing phase Running.
The kubelet's own pull duration and image size come from its `Pulled` event.

--write replaces only the text between the bench_pod_start markers of the file.
Install crane outside the checkout first:
    GOBIN=~/.cache/ck8s-gpu/bench-tools/crane-v0.22.1 \
        go install github.com/google/go-containerregistry/cmd/crane@v0.22.1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tools"))

from docsection import write_marked_section  # noqa: E402  (scripts/docsection.py)

START, END = "<!-- bench_pod_start:start", "<!-- bench_pod_start:end -->"
HEADING = "Pod start: preloaded vs pulled (local-kubelet tier)"
DEFAULT_CRANE = Path.home() / ".cache" / "ck8s-gpu" / "bench-tools" / "crane-v0.22.1" / "crane"
REPOSITORY = "ck8s-bench"
NODE = "bench-kubelet-0"
NAMESPACE = "default"
CONTAINER = "bench"
LARGE_MIB = 200
CASES = ("preloaded", "pull")

# --- the kubelet's events (k8s.io/kubernetes v1.34.4 pkg/kubelet/images/image_manager.go) -----------
# A pull: `Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.` (line 316);
# no pull: `Container image %q already present on machine` (line 182). %v of a time.Duration is Go's
# Duration.String(): "1.5s", "812.3ms", "1m2.5s".
PULLED = re.compile(r'Successfully pulled image "(?P<image>[^"]+)" in (?P<pull>\S+) '
                    r'\((?P<waiting>\S+) including waiting\)\. Image size: (?P<size>\d+) bytes\.')
PRESENT = re.compile(r'Container image "(?P<image>[^"]+)" already present on machine')
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|μs|ms|s|m|h)")


class BenchError(RuntimeError):
    """The benchmark could not measure what it claims (a pull that did not happen, a leftover)."""


def go_duration(text: str) -> float:
    """Seconds of a Go time.Duration string ("1m2.5s", "812.3ms", "0s")."""
    if text == "0s":
        return 0.0
    parts = _GO_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


@dataclass(frozen=True)
class Pull:
    image: str
    seconds: float
    waiting_seconds: float
    size_bytes: int


def pull_from_events(messages: Iterable[str], image: str) -> Pull | None:
    """The kubelet's pull of `image` from a pod's event messages; None when it found it present.
    Refuses a pod whose events say neither (the measurement would not know what it timed)."""
    present = False
    for msg in messages:
        m = PULLED.search(msg)
        if m and m["image"] == image:
            return Pull(image, go_duration(m["pull"]), go_duration(m["waiting"]), int(m["size"]))
        p = PRESENT.search(msg)
        present = present or bool(p and p["image"] == image)
    if present:
        return None
    raise BenchError(f"no Pulled event for {image} (neither a pull nor 'already present')")


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def pod_manifest(name: str, image: str, node: str = NODE) -> dict[str, Any]:
    """A pod whose container prints its start (wall clock, ns) then sleeps; nothing else to wait for."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": "bench-pod-start"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "automountServiceAccountToken": False,  # no projected token volume to wait for
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": CONTAINER, "image": image, "imagePullPolicy": "IfNotPresent",
                            "command": ["/bin/bash", "-c", "date +%s.%N; exec sleep infinity"]}],
        },
    }


def single_manifest_index(index: dict[str, Any]) -> dict[str, Any]:
    """tools/probe_image.py's index names one manifest twice (tag and digest, as a CRI pull records
    them); `crane push DIR` takes a layout with exactly one entry (go-containerregistry v0.22.1
    cmd/crane/cmd/push.go loadImage), so the registry copy keeps the first. Refuses two manifests."""
    manifests = index.get("manifests") or []
    digests = {m["digest"] for m in manifests}
    if len(digests) != 1:
        raise BenchError(f"expected one manifest in the image index, found {sorted(digests)}")
    return {**index, "manifests": [manifests[0]]}


@dataclass
class Run:
    case: str
    size: str
    to_container: float  # ADDED -> the container's first instruction
    to_running: float  # ADDED -> the event with phase Running
    pull: Pull | None
    import_seconds: float | None = None  # preloaded: the `ctr images import` before the pod (not in the times)


@dataclass
class Results:
    runs: list[Run] = field(default_factory=list)
    image_bytes: dict[str, int] = field(default_factory=dict)  # size -> its layer's bytes
    tier_start: float = 0.0
    leftovers: list[str] = field(default_factory=list)
    warmup: float = 0.0

    def of(self, size: str, case: str) -> list[Run]:
        return [r for r in self.runs if r.size == size and r.case == case]


def _mb(n: float) -> float:
    return n / 1e6


def markdown(res: Results, cores: int | None, runs: int, mem_gib: float) -> str:
    sizes = list(res.image_bytes)
    largest = max(res.image_bytes.values(), default=0)
    imports = {s: [r.import_seconds for r in res.of(s, "preloaded") if r.import_seconds is not None] for s in sizes}

    def cell(values: Sequence[float]) -> str:
        med, lo, hi = spread(values)
        return f"{med:.2f} ({lo:.2f}-{hi:.2f})"

    lines = [
        f"{START} (generated by scripts/bench_pod_start.py; do not edit by hand) -->",
        f"Machine: {cores} cores, {mem_gib:.0f} GiB memory, Python {platform.python_version()}, "
        f"{platform.machine()}; one node-tier node (kubelet v1.34.4, containerd v2.2.9 with the overlayfs "
        "snapshotter, runc, CNI bridge) beside the "
        f"loopback control plane; {runs} runs per row after one discarded warm-up pod; median (min-max) seconds.",
        "",
        "Images (built like tools/probe_image.py, one uncompressed layer each, not shared with the pause image): "
        + "; ".join(f"`{s}` {_mb(res.image_bytes[s]):.1f} MB" for s in sizes)
        + f" (`large` is `small` plus {LARGE_MIB} MiB of random bytes). Preloaded: imported with `ctr images "
        "import` before the pod (as the side-load does). Pull: image, blobs and snapshot removed first, the pod "
        "names `localhost:<port>/ck8s-bench/<size>@sha256:...` of a `crane registry serve` on loopback "
        "(containerd's default for a localhost registry on a port other than 443: plain HTTP after a TLS try, "
        "no hosts.toml; containerd v2.2.9 core/remotes/docker/config/hosts.go).",
        "",
        "| image | case | pod ADDED -> container runs (s) | pod ADDED -> phase Running (s) | kubelet's pull (s) |",
        "|---|---|---:|---:|---:|",
    ]
    for s in sizes:
        for case in CASES:
            rs = res.of(s, case)
            if not rs:
                continue
            pulls = [r.pull.seconds for r in rs if r.pull]
            lines.append(f"| {s} | {case} | {cell([r.to_container for r in rs])} | {cell([r.to_running for r in rs])} "
                         f"| {cell(pulls) if pulls else '-'} |")
    lines += ["", "What the pull adds (median pull-case minus median preloaded-case, container start) and the "
              "kubelet's pull rate (image size / its reported pull time):", "",
              "| image | pulled MB | added by the pull (s) | MB/s |", "|---|---:|---:|---:|"]
    for s in sizes:
        pre, pul = res.of(s, "preloaded"), res.of(s, "pull")
        got = [r.pull for r in pul if r.pull]
        if not pre or not got:
            continue
        added = statistics.median(r.to_container for r in pul) - statistics.median(r.to_container for r in pre)
        size = statistics.median(p.size_bytes for p in got)
        rate = statistics.median(_mb(p.size_bytes) / p.seconds for p in got if p.seconds > 0)
        lines.append(f"| {s} | {_mb(size):.1f} | {added:.2f} | {rate:.0f} |")
    lines += [
        "",
        "A loopback pull measures containerd's work (resolve, fetch over the loopback interface, digest checks, "
        "writing the content store, unpacking the layer into an overlayfs snapshot) and the kubelet's, not "
        "network transfer: a real registry adds the link's time for the same bytes (at 1 Gbit/s, "
        f"{_mb(largest):.0f} MB is {_mb(largest) * 8 / 1000:.1f} s more) and a compressed layer adds its "
        "decompression.",
        "",
        "The preloaded rows' `ctr images import` (outside their times; the side-load pays it at node boot "
        "or in the node image): " + "; ".join(f"`{s}` {cell(v)} s" for s, v in imports.items() if v) + ".",
        "",
        f"Node tier start (images built and imported, containerd, kubelet Ready, plugin's slice): "
        f"{res.tier_start:.1f} s; warm-up pod (first on the node, preloaded small): {res.warmup:.2f} s to its "
        f"container. Left behind after teardown: {', '.join(res.leftovers) or 'nothing'}.",
        "",
        "Reproduce: `bash tools/build.sh`, install crane (see the script's docstring), then "
        "`sudo .venv/bin/python scripts/bench_pod_start.py --write docs/benchmarks.md`.",
        END,
    ]
    return "\n".join(lines)


# --- the machinery (needs root and the tools cache) ------------------------------------------------


def build_images(out: Path, registry: str) -> dict[str, Any]:
    """size -> probe_image.Image named <registry>/ck8s-bench/<size>:<tag>, one layer each."""
    import hashlib

    import probe_image

    base = probe_image.rootfs_files()
    extra = out / "extra"
    extra.mkdir(parents=True, exist_ok=True)
    marker = extra / "small.txt"
    marker.write_text("ck8s-gpu bench_pod_start: small\n")  # the layer differs from the pause image's
    blob = extra / "random.bin"
    if not blob.exists() or blob.stat().st_size != LARGE_MIB * 2**20:
        blob.write_bytes(random.Random(29).randbytes(LARGE_MIB * 2**20))  # fixed seed: same digest each run
    images = {}
    for size, files in (("small", {"bench/marker.txt": marker}), ("large", {"bench/marker.txt": marker,
                                                                              "bench/random.bin": blob})):
        layer_tar = probe_image.layer({**base, **files})
        tag = hashlib.sha256(layer_tar).hexdigest()[:12]
        images[size] = probe_image.write_image(out / size, size, f"{registry}/{REPOSITORY}/{size}:{tag}",
                                               layer_tar, ["/bin/bash"])
        del layer_tar
    return images


def blobs_of(archive: Path) -> tuple[str, str, int]:
    """(config digest, layer digest, layer bytes) of a one-layer image, from its OCI layout archive."""
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        digest = index["manifests"][0]["digest"].split(":", 1)[1]
        manifest = json.load(tar.extractfile(f"blobs/sha256/{digest}"))  # type: ignore[arg-type]
    (layer,) = manifest["layers"]
    return manifest["config"]["digest"], layer["digest"], int(layer["size"])


def image_names(image: Any, config_digest: str) -> tuple[str, str, str]:
    """Every name containerd's CRI plugin gives one image: the tag and repo@digest a pull records,
    and the image ID, its config's digest, which the CRI plugin adds to an imported image too
    (containerd v2.2.9 internal/cri/server/images/image_pull.go PullImage and UpdateImage; that
    record alone keeps the blobs and the snapshot alive)."""
    return image.name, image.by_digest, config_digest


def push(crane: Path, image: Any, work: Path) -> None:
    """The image into the loopback registry under its tag, checked by digest."""
    layout = work / f"layout-{image.kind}"
    shutil.rmtree(layout, ignore_errors=True)
    with tarfile.open(image.archive) as tar:
        tar.extractall(layout, filter="data")
    index = json.loads((layout / "index.json").read_text())
    (layout / "index.json").write_text(json.dumps(single_manifest_index(index)))
    subprocess.run([str(crane), "push", "--insecure", str(layout), image.name], check=True, capture_output=True)
    got = subprocess.run([str(crane), "digest", "--insecure", image.name], check=True, capture_output=True,
                         text=True).stdout.strip()
    if got != image.digest:
        raise BenchError(f"the registry holds {got} for {image.name}, not {image.digest}")
    shutil.rmtree(layout, ignore_errors=True)


def _until(what: str, ok: Any, timeout: float, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ok()
        if got:
            return got
        time.sleep(interval)
    raise BenchError(f"timed out after {timeout:.0f}s waiting for {what}")


class Bench:
    def __init__(self, work: Path, crane: Path, runs: int) -> None:
        import dra_publisher
        import localcluster
        import nodetier

        self.nt, self.work, self.crane, self.runs = nodetier, work, crane, runs
        self.bin_dir = localcluster.tools_bin_dir()
        lacking = nodetier.missing(self.bin_dir)
        if not os.access(crane, os.X_OK):
            lacking.append(f"crane at {crane} (see this script's docstring)")
        if lacking:
            raise SystemExit("missing: " + "; ".join(lacking))
        self.port = localcluster.free_port()
        self.registry = f"localhost:{self.port}"
        self.cluster = localcluster.LocalCluster(work / "cluster", nodes=1, bin_dir=self.bin_dir,
                                                 name="ck8s-bench-pod-start")
        devices = dra_publisher.resource_slice_manifest(NODE, 1)["spec"]["devices"]
        self.tier = nodetier.NodeTier(work / "nodes", self.cluster.kubeconfig, [nodetier.NodeSpec(NODE, devices)],
                                      bin_dir=self.bin_dir)
        self.registry_proc: subprocess.Popen[bytes] | None = None
        self.watch: Any = None
        self.res = Results()

    @property
    def node(self) -> Any:
        return self.tier.nodes[0]

    # image state in the node's containerd ---------------------------------------------------------
    def _image_users(self, image: Any) -> list[str]:
        rows = self.node.ctr("containers", "ls").splitlines()[1:]
        return [r.split()[0] for r in rows if len(r.split()) > 1 and r.split()[1] in (image.name, image.by_digest)]

    def _remains(self, image: Any) -> list[str]:
        config, layer, _ = blobs_of(image.archive)
        names = self.node.ctr("images", "ls", "-q").split()
        out = [f"image {n}" for n in names if n in image_names(image, config)]
        out += [f"blob {d}" for d in self.node.ctr("content", "ls", "-q").split()
                if d in (image.digest, config, layer)]
        # One uncompressed layer: its diff ID is its digest and the committed snapshot's name.
        out += [f"snapshot {line.split()[0]}" for line in self.node.ctr("snapshots", "ls").splitlines()[1:]
                if line.split() and line.split()[0] == layer]
        return out

    def remove(self, image: Any) -> None:
        """No trace of `image` in containerd: its container gone (the kubelet removes a deleted pod's
        dead containers on its PLEG event: k8s v1.34.4 pkg/kubelet/kubelet.go cleanUpContainersInPod),
        then its three names, its blobs and its snapshot (`--sync` waits for the collection)."""
        _until(f"containers of {image.kind} to be removed", lambda: not self._image_users(image), 120, 0.5)
        self.node.ctr("images", "remove", "--sync", *image_names(image, blobs_of(image.archive)[0]), check=False)
        _until(f"{image.kind} to leave containerd (left: {self._remains(image)})", lambda: not self._remains(image),
               90, 0.5)

    # one pod ----------------------------------------------------------------------------------------
    def _events(self, name: str) -> list[str]:
        items = json.loads(self.tier.kubectl("get", "events", "-n", NAMESPACE, "--field-selector",
                                             f"involvedObject.name={name}", "-o", "json"))["items"]
        return [e.get("message", "") for e in items]

    def _first(self, name: str, pred: Any, timeout: float) -> float:
        """Arrival (monotonic) of the first watch event of pod `name` satisfying pred(object)."""
        def seen() -> float | None:
            with self.watch._lock:  # tools/localcluster.py Watch: events and arrival times, index for index
                events = list(zip(self.watch.events, self.watch.arrived, strict=True))
            for event, t in events:
                obj = event.get("object", {})
                if obj.get("metadata", {}).get("name") == name and pred(obj):
                    return float(t)
            return None
        return float(_until(f"pod {name}", seen, timeout, 0.05))

    def pod(self, name: str, image: Any, case: str, size: str) -> Run:
        ref = image.by_digest
        offset = time.time() - time.monotonic()
        self.cluster.create(pod_manifest(name, ref))
        added = self._first(name, lambda o: True, 60)
        running = self._first(name, lambda o: o.get("status", {}).get("phase") == "Running", 600)
        printed = _until(f"{name}'s start line", lambda: self.tier.kubectl(
            "logs", "-n", NAMESPACE, name, "-c", CONTAINER, check=False).strip(), 60)
        started = float(printed.split()[0]) - offset  # wall clock -> monotonic
        pull = pull_from_events(_until(f"{name}'s Pulled event", lambda: [
            m for m in self._events(name) if PULLED.search(m) or PRESENT.search(m)], 30), ref)
        if (pull is None) != (case == "preloaded"):
            raise BenchError(f"{name}: a {case} run but the kubelet {'pulled' if pull else 'found the image present'}")
        self.tier.kubectl("delete", "pod", "-n", NAMESPACE, name, "--grace-period=0", "--force", "--wait=true")
        return Run(case, size, started - added, running - added, pull)

    # the whole run ----------------------------------------------------------------------------------
    def run(self) -> Results:
        reg_log = self.work / "registry.log"
        (self.work / "registry").mkdir(parents=True, exist_ok=True)  # --disk must exist (uploads go there)
        with reg_log.open("ab") as log:
            self.registry_proc = subprocess.Popen(
                [str(self.crane), "registry", "serve", "--address", f"127.0.0.1:{self.port}",
                 "--disk", str(self.work / "registry")], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        images = build_images(self.work / "images", self.registry)
        self.res.image_bytes = {s: blobs_of(im.archive)[2] for s, im in images.items()}
        for im in images.values():
            _until(f"the registry to take {im.name} ({reg_log})", lambda im=im: self._try_push(im), 30, 0.5)
        self.cluster.up()
        self.tier.up()
        self.res.tier_start = self.tier.start_seconds or 0.0
        self.watch = self.cluster.watch("pods", NAMESPACE)
        time.sleep(3)  # the watch established before the first pod: its ADDED event is the start mark
        small = images["small"]
        self.node.import_image(small.archive)
        warm = self.pod("bench-warmup", small, "preloaded", "small")
        self.res.warmup = warm.to_container
        for size, im in images.items():
            for i in range(self.runs):
                self.remove(im)
                self.res.runs.append(self.pod(f"bench-{size}-pull-{i}", im, "pull", size))
                self.remove(im)
                t = time.monotonic()
                self.node.import_image(im.archive)
                imported = time.monotonic() - t
                self.res.runs.append(self.pod(f"bench-{size}-preloaded-{i}", im, "preloaded", size))
                self.res.runs[-1].import_seconds = imported
                print(f"{size} run {i}: {self.res.runs[-2]}\n{' ' * 12}{self.res.runs[-1]}", file=sys.stderr)
        return self.res

    def _try_push(self, image: Any) -> bool:
        try:
            push(self.crane, image, self.work)
        except subprocess.CalledProcessError as exc:
            print(f"crane: {exc.stderr.decode(errors='replace').strip()}", file=sys.stderr)
            return False
        return True

    def down(self) -> list[str]:
        if self.watch is not None:
            self.watch.stop()
        problems: list[str] = [*self.tier.down(), *self.tier.leftovers()]
        self.cluster.down()
        if self.registry_proc is not None and self.registry_proc.poll() is None:
            self.registry_proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.registry_proc.wait(10)
            if self.registry_proc.poll() is None:
                self.registry_proc.kill()
        return problems


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per image size and case")
    ap.add_argument("--crane", type=Path, default=DEFAULT_CRANE, help="go-containerregistry v0.22.1's crane")
    ap.add_argument("--write", type=Path, help="replace the bench_pod_start section of this markdown file")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-pod-start-") as tmp:
        bench = Bench(Path(tmp), args.crane, args.runs)
        try:
            res = bench.run()
        finally:
            left = bench.down()
        res.leftovers = left
    section = markdown(res, os.cpu_count(), args.runs, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    print(section)
    if args.write:
        write_marked_section(args.write, START, END, section, HEADING)
    return 0


if __name__ == "__main__":
    sys.exit(main())
