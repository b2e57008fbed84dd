"""A Helm chart repository on loopback, made of this project's own charts at chosen versions.

What the real-engine upgrade test mirrors its add-on from (`gpuStack.addons.<x>.repository`).
Formats as Helm reads them (helm v3.18.6, the library pulumi-kubernetes' provider links):
- a chart archive is a gzipped tar whose entries all sit under ONE top-level directory, the
  loader drops that first path element (pkg/chart/loader/archive.go, LoadArchiveFiles) and
  skips directory entries;
- `<repo>/index.yaml` (pkg/repo/chartrepo.go, DownloadIndexFile) is an IndexFile: `apiVersion:
  v1`, `generated`, `entries: {<chart>: [ChartVersion...]}`, where a ChartVersion is the chart's
  Chart.yaml metadata plus `urls` (relative ones resolve against the repository URL), `created`
  and `digest`, the archive's sha256 (pkg/repo/index.go, IndexFile/ChartVersion/MustAdd); an
  exact version is looked up first (IndexFile.Get).
"""

from __future__ import annotations

import functools
import hashlib
import io
import tarfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

CREATED = "2026-01-01T00:00:00Z"  # fixed: archives and index are reproducible


def package(chart_dir: Path, out_dir: Path, version: str, extra_templates: Mapping[str, str] | None = None) -> Path:
    """`<name>-<version>.tgz` of `chart_dir` with Chart.yaml's version set to `version` (plus
    `extra_templates`: file name -> text under templates/). Returns the archive's path."""
    meta = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    meta["version"] = version
    name = meta["name"]
    files: dict[str, bytes] = {}
    for path in sorted(p for p in chart_dir.rglob("*") if p.is_file()):
        files[path.relative_to(chart_dir).as_posix()] = path.read_bytes()
    files["Chart.yaml"] = yaml.safe_dump(meta, sort_keys=False).encode()
    for fname, text in (extra_templates or {}).items():
        files[f"templates/{fname}"] = text.encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / f"{name}-{version}.tgz"
    archive.write_bytes(buf.getvalue())
    return archive


def write_index(repo_dir: Path) -> dict[str, Any]:
    """index.yaml of every archive in `repo_dir` (newest version first, as Helm sorts them)."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for archive in sorted(repo_dir.glob("*.tgz")):
        with tarfile.open(archive) as tar:
            chart_yaml = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml"))
            extracted = tar.extractfile(chart_yaml)
            assert extracted is not None
            meta = yaml.safe_load(extracted.read())
        entry = {**meta, "urls": [archive.name], "created": CREATED,
                 "digest": hashlib.sha256(archive.read_bytes()).hexdigest()}
        entries.setdefault(meta["name"], []).append(entry)
    for versions in entries.values():
        versions.sort(key=lambda e: _semver_key(e["version"]), reverse=True)
    index = {"apiVersion": "v1", "entries": entries, "generated": CREATED}
    (repo_dir / "index.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
    return index


def _semver_key(version: str) -> tuple[tuple[int, ...], int, str]:
    core, _, pre = version.lstrip("v").partition("-")
    return tuple(int(p) for p in core.split(".")), 0 if pre else 1, pre


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve(repo_dir: Path) -> Iterator[str]:
    """Serve `repo_dir` on 127.0.0.1 (a free port) for the duration; yields the repository URL."""
    handler = functools.partial(_QuietHandler, directory=str(repo_dir))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="chart-repo", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

