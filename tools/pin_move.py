#!/usr/bin/env python3
"""A chart or image pin move that proves itself: one command a maintainer runs after editing the pin.

    .venv/bin/python tools/pin_move.py --addon gpu-operator --chart /tmp/up/deployments/gpu-operator \\
        [--as-released v26.7.1] [--no-golden] [-- <tools/compat_controllers.py arguments>]

`--chart` is the unpacked upstream chart at the NEW version (`helm pull --untar`, or `git archive
<tag> <chart dir> | tar -x`): CI cannot fetch charts and fetched code never enters the project.
With the pin (components/tables/pins.py CHARTS) and the add-on's image catalog already moved, it:

1. re-renders the chart with the values of every committed stack that installs the add-on
   (tools/render_upstream_chart.py: the chart is the pinned version; every values key the project
   sets exists in the chart; strict Kubernetes schemas 1.34-1.36; the policy pack's object
   policies; Pod Security of the namespace; nodeSelector/tolerations reach the pods);
2. checks the add-on's image catalog against the chart: each image key exists in the chart's
   values (or a bundled subchart's), and the tag the chart will run (the project's value, else the
   chart's default) is the catalog's, so preloads, mirrors and the offline policy see the image
   that really runs;
3. regenerates the goldens (UPDATE_GOLDEN=1 over the pure tier) and shows their diff for review
   (`--no-golden` skips it);
4. with arguments after `--`, runs tools/compat_controllers.py with them: the real controllers of
   the new version on the loopback control plane (docs/compatibility.md records the result).

Exit status: 0 nothing found (and the compatibility run, if asked, passed); 1 a problem or a failed
compatibility run; 2 bad arguments. Documented in docs/compatibility.md ("Moving a pin").
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import render_upstream_chart  # noqa: E402  (tools/ beside this file)

TAG_KEYS = ("version", "tag")  # the last part of an image key that holds the tag


def committed_stacks() -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (REPO / "stacks").glob("Pulumi.*.yaml")
                  if not p.name.endswith(".regions.yaml"))


_MISSING = object()


def lookup(tree: Any, dotted: str) -> Any:
    node = tree
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def templates_read(chart_dir: Path, key: str) -> bool:
    """Whether the chart's templates read `.Values.<key>` (a key values.yaml leaves out, such as an
    image version defaulting to appVersion); a subchart's key is looked up in its own templates."""
    first, _, rest = key.partition(".")
    sub = chart_dir / "charts" / first
    if rest and (sub / "Chart.yaml").is_file():
        return templates_read(sub, rest)
    needle = re.compile(rf"\.Values\.{re.escape(key)}(?![\w.])")
    files = [f for f in (chart_dir / "templates").rglob("*") if f.is_file()]
    return any(needle.search(f.read_text(errors="replace")) for f in files)


def image_problems(addon_name: str, chart_dir: Path, stack_values: Mapping[str, Mapping[str, Any]]) -> Iterator[str]:
    """The add-on's catalog entries (components/addons/<addon>.py IMAGES) against the chart: every
    key exists, and the tag the chart runs for each stack is the catalog's."""
    from components.addons.catalog import BY_NAME
    from components.addons.image_catalog import entries
    from components.addons.image_refs import NODE_OS_TAG

    addon = BY_NAME[addon_name]
    defaults = render_upstream_chart.chart_values(chart_dir)
    for entry in entries(addon.chart_pin or addon.chart_name):
        for key in entry.keys:
            if lookup(defaults, key) is _MISSING and not templates_read(chart_dir, key):
                yield (f"image {entry.name}: key {key} is neither in the chart's values nor read by its "
                       "templates (nor a bundled subchart's)")
        tag_keys = [k for k in entry.keys if k.rsplit(".", 1)[-1] in TAG_KEYS]
        if entry.kernel_tagged or not tag_keys:
            continue
        for stack, values in stack_values.items():
            own = lookup(values, tag_keys[0])
            tag = own if own is not _MISSING and own not in (None, "") else lookup(defaults, tag_keys[0])
            if tag in (_MISSING, None, ""):
                continue  # no tag in the chart: its template derives one (appVersion), render checks it
            # the GPU Operator appends the node's OS to a compiled driver's tag (controllers/
            # object_controls.go resolveDriverTag): the catalog holds the tag a node pulls
            if entry.image.tag not in (str(tag), f"{tag}-{NODE_OS_TAG}"):
                yield (f"image {entry.name}: stack {stack} runs {tag_keys[0]}={tag}, the catalog says "
                       f"{entry.image.tag} (components/addons/{addon.name.replace('-', '_')}.py IMAGES)")


def render_all(addon_name: str, chart_dir: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """render_upstream_chart over every committed stack that installs the add-on."""
    from components.addons.graph import final_values, install_graph
    from components.settings.load import SettingsError

    found: list[str] = []
    values_by_stack: dict[str, dict[str, Any]] = {}
    for stack in committed_stacks():
        try:
            settings = render_upstream_chart.stack_settings(stack, False, None)
        except SettingsError as exc:
            found.append(f"stack {stack}: {exc.message}")
            continue
        values = final_values(install_graph(settings), settings)
        if addon_name not in values:
            print(f"stack {stack}: {addon_name} is off: not rendered")
            continue
        values_by_stack[stack] = values[addon_name]
        seen, problems = render_upstream_chart.judge(chart_dir, addon_name, settings, values[addon_name])
        print(f"stack {stack}: {len(seen)} objects, {len(problems)} problems")
        found += [f"stack {stack}: {p}" for p in problems]
    if not values_by_stack:
        found.append(f"no committed stack installs {addon_name}: nothing was re-rendered")
    return found, values_by_stack


def as_released(chart_dir: Path, version: str, work: Path) -> Path:
    """A copy of a chart's source tree with version and appVersion what its release sets."""
    copy = work / chart_dir.name
    shutil.copytree(chart_dir, copy)
    meta = yaml.safe_load((copy / "Chart.yaml").read_text())
    meta["version"], meta["appVersion"] = version, version
    (copy / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return copy


def golden_diff() -> int:
    """UPDATE_GOLDEN=1 over the pure tier, then the goldens' diff (printed for review)."""
    env = {**os.environ, "UPDATE_GOLDEN": "1"}
    cores = str(os.cpu_count() or 2)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", cores,
                          "-m", "not slow and not integration", "tests/unit"], cwd=REPO, env=env, check=False)
    subprocess.run(["git", "--no-pager", "diff", "--stat", "--", "tests/golden"], cwd=REPO, check=False)
    subprocess.run(["git", "--no-pager", "diff", "--", "tests/golden"], cwd=REPO, check=False)
    return run.returncode


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    compat: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, compat = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--addon", required=True, help="the add-on whose chart moved, e.g. gpu-operator")
    ap.add_argument("--chart", required=True, type=Path, help="the unpacked upstream chart at the new version")
    ap.add_argument("--no-golden", action="store_true", help="do not regenerate the goldens")
    ap.add_argument("--as-released", metavar="VERSION",
                    help="the chart is a source tree: judge a copy with Chart.yaml version and appVersion set to "
                         "VERSION, as the release packages it (e.g. NVIDIA/gpu-operator .github/workflows/"
                         "release-rc-assets.yaml: helm package --version TAG --app-version TAG)")
    return ap.parse_args(argv), compat


def main(argv: list[str] | None = None) -> int:
    from components.addons.catalog import BY_NAME

    args, compat = parse(list(sys.argv[1:] if argv is None else argv))
    problems: list[str] = []
    if args.addon not in BY_NAME or BY_NAME[args.addon].chart_pin is None:
        pinned = ", ".join(n for n, a in sorted(BY_NAME.items()) if a.chart_pin)
        problems.append(f"--addon: {args.addon!r} is not an add-on with a pinned chart ({pinned})")
    if not (args.chart / "Chart.yaml").is_file() or not (args.chart / "values.yaml").is_file():
        problems.append(f"--chart: {args.chart} has no Chart.yaml and values.yaml (an unpacked chart)")
    if problems:
        for p in problems:
            print(f"pin_move: {p}", file=sys.stderr)
        return 2
    chart = args.chart.resolve()
    if args.as_released:
        chart = as_released(chart, args.as_released, Path(tempfile.mkdtemp(prefix="pin-move-")))
        print(f"pin_move: judging {chart} (Chart.yaml version and appVersion {args.as_released})")
    found, values = render_all(args.addon, chart)
    found += list(image_problems(args.addon, chart, values))
    for p in found:
        print(f"PROBLEM: {p}")
    status = 1 if found else 0
    if not args.no_golden and golden_diff() != 0:
        print("pin_move: the pure tier failed after regenerating the goldens (see above)")
        status = 1
    if compat:
        rc = subprocess.run([sys.executable, str(REPO / "tools" / "compat_controllers.py"), *compat],
                            cwd=REPO, check=False).returncode
        print(f"pin_move: compatibility run exit {rc}")
        status = status or (1 if rc else 0)
    print(f"pin_move: {args.addon}: {len(found)} problems" + ("" if compat else "; no compatibility run (no sources)"))
    return status


if __name__ == "__main__":
    sys.exit(main())
