"""tools/pin_move.py, the pin-move command, against stand-in charts of the EFA device plugin add-on
(the real chart at v0.5.30 gives 0 problems: docs/compatibility.md "Moving a pin"). Each stand-in
differs from a clean one by exactly what a bad bump would bring: a values key gone, another version,
a default image tag the catalog does not have, a custom resource its CRD refuses, a kind no CRD
defines. Each is named, with exit 1; a clean one passes with exit 0; bad arguments exit 2."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.tools import load_tool

ADDON = "aws-efa-k8s-device-plugin"
pin_move = load_tool("pin_move")

DAEMONSET = """apiVersion: apps/v1
kind: DaemonSet
metadata: {name: efa, namespace: {{ .Release.Namespace }}}
spec:
  selector: {matchLabels: {app: efa}}
  template:
    metadata: {labels: {app: efa}}
    spec:
      nodeSelector: {{ toJson .Values.nodeSelector }}
      tolerations: {{ toJson .Values.tolerations }}
      volumes:  # the kubelet's device-plugin socket dir: why its namespace is privileged
      - {name: device-plugin, hostPath: {path: /var/lib/kubelet/device-plugins}}
      containers:
      - name: efa
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
"""
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.example.com"},
       "spec": {"group": "example.com", "scope": "Cluster",
                "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}}}}}}}]}}


def chart(tmp_path: Path, *, version: str = "v0.5.30", drop: str | None = None, tag: str = "v0.5.20",
          extra_template: str = "") -> Path:
    d = tmp_path / "aws-efa-k8s-device-plugin"
    (d / "templates").mkdir(parents=True)
    (d / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": ADDON, "version": version,
                                                  "appVersion": tag}))
    values: dict[str, Any] = {"image": {"repository": "public.ecr.aws/eks/aws-efa-k8s-device-plugin", "tag": tag},
                              "nodeSelector": {}, "tolerations": [],
                              "supportedInstanceLabels": {"keys": ["a"], "values": ["b"]}}
    if drop:
        values = copy.deepcopy(values)
        values.pop(drop)
    (d / "values.yaml").write_text(yaml.safe_dump(values))
    (d / "templates" / "daemonset.yaml").write_text(DAEMONSET)
    if extra_template:
        (d / "crds").mkdir()
        (d / "crds" / "widgets.yaml").write_text(yaml.safe_dump(CRD))
        (d / "templates" / "widget.yaml").write_text(extra_template)
    return d


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = pin_move.main(["--addon", ADDON, "--no-golden", *args])
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_a_clean_bump_renders_every_stack_that_installs_it_and_passes(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run(capsys, "--chart", str(chart(tmp_path)))
    assert rc == 0, out
    assert "stack aws-prod: 1 objects, 0 problems" in out
    assert "stack aws-dev: aws-efa-k8s-device-plugin is off: not rendered" in out
    assert "PROBLEM" not in out and "0 problems; no compatibility run" in out


@pytest.mark.parametrize(("kwargs", "problem"), [
    ({"drop": "supportedInstanceLabels"},
     "stack aws-prod: values key supportedInstanceLabels: not in the chart's values.yaml"),
    ({"version": "v0.5.31"}, "stack aws-prod: chart version v0.5.31 is not the pinned v0.5.30"),
    ({"tag": "v0.5.21"}, "image efa-device-plugin: stack aws-prod runs image.tag=v0.5.21, the catalog says v0.5.20"),
    ({"extra_template": WIDGET + "spec: {size: 1, colour: red}\n"},
     "schema CRD: Widget/w: spec: Additional properties are not allowed ('colour' was unexpected)"),
    ({"extra_template": WIDGET + "spec: {size: big}\n"},
     "schema CRD: Widget/w: spec.size: 'big' is not of type 'integer'"),
    ({"extra_template": "apiVersion: example.com/v2\nkind: Gadget\nmetadata: {name: g}\n"},
     "Gadget/g: example.com/v2 Gadget is neither built in nor defined by a CRD here"),
])
def test_what_a_bad_bump_brings_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         kwargs: dict[str, Any], problem: str) -> None:
    rc, out = run(capsys, "--chart", str(chart(tmp_path, **kwargs)))
    assert rc == 1, out
    assert problem in out, out


def test_a_source_tree_is_judged_as_its_release_packages_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = chart(tmp_path, version="v1.0.0-devel")
    rc, out = run(capsys, "--chart", str(tree))
    assert rc == 1 and "chart version v1.0.0-devel is not the pinned v0.5.30" in out
    rc, out = run(capsys, "--chart", str(tree), "--as-released", "v0.5.30")
    assert rc == 0, out
    assert yaml.safe_load((tree / "Chart.yaml").read_text())["version"] == "v1.0.0-devel"  # the tree is untouched


def test_bad_arguments_exit_2_naming_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = pin_move.main(["--addon", "kai-queues", "--chart", str(tmp_path), "--no-golden"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--addon: 'kai-queues' is not an add-on with a pinned chart" in err
    assert f"--chart: {tmp_path} has no Chart.yaml and values.yaml" in err


def test_arguments_after_a_double_dash_run_the_compatibility_run(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Without upstream trees tools/compat_controllers.py checks nothing and exits 0 (its own
    tests); a bad argument there fails the move."""
    rc, out = run(capsys, "--chart", str(chart(tmp_path)), "--", "--out", str(tmp_path / "compat.md"))
    assert rc == 0 and "pin_move: compatibility run exit 0" in out, out
    rc, out = run(capsys, "--chart", str(chart(tmp_path / "again")), "--", "--only", "bogus")
    assert rc == 1 and "pin_move: compatibility run exit 2" in out, out
