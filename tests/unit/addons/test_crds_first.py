"""CRDs first: which releases get their chart's CRDs applied before them, and reading a chart's crds/.
(Applying them to a real API server: tests/integration/test_local_cluster.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.addons.crds import BY_CHART
from components.addons.crds_first import CrdError, chart_crds, crd_not_established
from tests.helpers import chart_repo
from tests.unit.addons.helpers import by_name, settings
from tests.unit.addons.test_upgrades import run

CRDS_FIRST = "pulumi-python:dynamic/ck8s-gpu:CrdsFirst"


def test_every_chart_without_its_own_crd_upgrade_gets_its_crds_applied_first() -> None:
    plan = run(settings("aws", gpuStack={"addons": {"draDriver": {"version": "0.4.2"}}}))
    res = by_name(plan)
    crds = {r.name: r for r in plan.resources if r.type == CRDS_FIRST}
    releases = {r.name: r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release"}
    for name, release in releases.items():
        chart = str(release.inputs["chart"]).rsplit("/", 1)[-1]
        handling = BY_CHART.get(chart)
        wanted = handling is not None and handling.manual
        assert (f"{name}-crds" in crds) is wanted, name
        if wanted:
            step = crds[f"{name}-crds"]
            assert step.urn in release.dependencies
            assert step.inputs["version"] == release.inputs["version"] and step.inputs["chart"] == chart
            assert "kubeconfig" in step.secret_paths
    assert res["gpu-dra-driver-crds"].inputs["version"] == "0.4.2"


def _chart(tmp: Path, crds: str) -> bytes:
    src = tmp / "src"
    (src / "crds").mkdir(parents=True)
    (src / "templates").mkdir()
    (src / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": "demo", "version": "1.0.0"}))
    (src / "crds" / "a.yaml").write_text(crds)
    return chart_repo.package(src, tmp / "repo", "1.0.0").read_bytes()


def test_chart_crds_reads_every_crd_document(tmp_path: Path) -> None:
    docs = "\n---\n".join(yaml.safe_dump({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                                          "metadata": {"name": f"{n}.demo.test"}}) for n in ("as", "bs"))
    assert [c["metadata"]["name"] for c in chart_crds(_chart(tmp_path, docs))] == ["as.demo.test", "bs.demo.test"]


def test_anything_but_a_crd_under_crds_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CrdError, match=r"a\.yaml: ConfigMap v1 under crds/ is not a CustomResourceDefinition"):
        chart_crds(_chart(tmp_path, yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap"})))


def test_a_crd_serves_its_kind_only_once_names_accepted_and_established() -> None:
    def crd(*conds: tuple[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": "queues.scheduling.run.ai"},
                "status": {"conditions": [{"type": t, "status": s, **({"reason": "InProgress"} if s != "True" else {})}
                                          for t, s in conds]}}

    assert crd_not_established(crd()) == "queues.scheduling.run.ai: NamesAccepted is unset"
    assert crd_not_established(crd(("NamesAccepted", "True"))) == "queues.scheduling.run.ai: Established is unset"
    assert crd_not_established(crd(("NamesAccepted", "False"))).endswith("NamesAccepted is False (InProgress: )")
    assert crd_not_established(crd(("NamesAccepted", "True"), ("Established", "True"))) == ""
