"""CRDs first: a chart that keeps its CRDs in `crds/` with no upgrade mechanism of its own
(`manual=True` in components/addons/crds.py) gets the CRDs of the release's version applied
before the release, because Helm installs `crds/` once and never upgrades it (helm v3.18
pkg/action/install.go installCRDs, pkg/action/upgrade.go).

`CrdsFirst` pulls the chart at the release's repository and version with Helm's own library
(helm-python-sdk `pull`, `Chart.crds`), then server-side applies each CustomResourceDefinition
(field manager `ck8s-gpu`, conflicts forced, as the upstream guides' `kubectl apply
--server-side --force-conflicts` does). On a fresh cluster Helm's install then finds them present
and skips them. Deleting the resource leaves the CRDs: deleting a CRD deletes every object of it.

Pickled into the state by reference to this module: keep it importable at this path.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic
import yaml

FIELD_MANAGER = "ck8s-gpu"
CRD_API = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")


class CrdError(Exception):
    pass


def chart_crds(archive: bytes) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions under the chart's (and its subcharts') `crds/`, in file order."""
    import helm_python

    chart = helm_python.Chart.load_archive(archive)
    out: list[dict[str, Any]] = []
    for entry in chart.crds:
        for doc in yaml.safe_load_all(entry["data"]):
            if not doc:
                continue
            if (doc.get("apiVersion"), doc.get("kind")) != CRD_API:
                raise CrdError(f"{entry['filename']}: {doc.get('kind')} {doc.get('apiVersion')} under crds/ is not a "
                               "CustomResourceDefinition (apiextensions.k8s.io/v1)")
            out.append(doc)
    return out


def pull(repo: str, chart: str, version: str) -> bytes:
    """The chart archive at `version` from an https/http Helm repository or an `oci://` prefix."""
    import helm_python

    with tempfile.TemporaryDirectory() as tmp:
        if repo.startswith("oci://"):
            helm_python.pull(f"{repo}/{chart}", version=version, destination=tmp)
        else:
            helm_python.pull(chart, repo_url=repo, version=version, destination=tmp)
        archives = sorted(Path(tmp).glob("*.tgz"))
        if len(archives) != 1:
            raise CrdError(f"pulling {chart} {version} from {repo} gave {len(archives)} archives")
        return archives[0].read_bytes()


def crd_not_established(crd: dict[str, Any]) -> str:
    """Why a CRD does not serve its kind yet ("" when it does): the API server's apiextensions
    controllers set NamesAccepted, then Established; until then a custom resource of it is refused
    with "no matches for kind" (k8s.io/apiextensions-apiserver pkg/controller/establish)."""
    conds = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}
    for kind in ("NamesAccepted", "Established"):
        c = conds.get(kind) or {}
        if c.get("status") != "True":
            return f"{crd.get('metadata', {}).get('name')}: {kind} is {c.get('status', 'unset')}" + (
                f" ({c['reason']}: {c.get('message', '')})" if c.get("reason") else "")
    return ""


ESTABLISH_SECONDS = 60


def apply(kubeconfig: str, crds: list[dict[str, Any]], establish_seconds: float = ESTABLISH_SECONDS) -> list[str]:
    """Server-side apply each CRD, then wait until all of them serve their kinds: a release or a
    custom resource that depends on this resource may be created the next moment."""
    import time

    from kubernetes import client

    from ..kube.client import api_client

    api = client.ApiextensionsV1Api(api_client(kubeconfig))
    names = []
    for crd in crds:
        name = crd["metadata"]["name"]
        api.patch_custom_resource_definition(name, crd, field_manager=FIELD_MANAGER, force=True,
                                             _content_type="application/apply-patch+yaml")
        names.append(name)
    deadline = time.monotonic() + establish_seconds
    while True:
        waiting = [why for n in names if (why := crd_not_established(
            api.api_client.sanitize_for_serialization(api.read_custom_resource_definition(n))))]
        if not waiting:
            return names
        if time.monotonic() >= deadline:
            raise CrdError(f"not established after {establish_seconds:.0f}s: {'; '.join(waiting)}")
        time.sleep(0.5)


def _run(props: dict[str, Any]) -> dict[str, Any]:
    try:
        crds = chart_crds(pull(props["repository"], props["chart"], props["version"]))
        names = apply(props["kubeconfig"], crds)
    except Exception as exc:  # the engine shows this message, naming the chart and the cause
        raise CrdError(f"CRDs of {props['chart']} {props['version']} from {props['repository']}: {exc}") from None
    return {**props, "crds": names}


class _Provider(pulumi.dynamic.ResourceProvider):
    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=uuid.uuid4().hex, outs=_run(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # A new kubeconfig (rotated credentials) is not a reason to apply again.
        keys = [k for k in ("repository", "chart", "version") if olds.get(k) != news.get(k)]
        return pulumi.dynamic.DiffResult(changes=bool(keys))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=_run(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None  # CRDs stay: removing one would delete every object of its kind


class CrdsFirst(pulumi.dynamic.Resource, module="ck8s-gpu", name="CrdsFirst"):  # type: ignore[misc,call-arg]
    """The chart's `crds/` at `version`, applied before its release (see the module docstring)."""

    crds: pulumi.Output[list[str]]

    def __init__(self, name: str, kubeconfig: pulumi.Input[str], *, repository: str, chart: str, version: str,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(_Provider(), name, {
            "kubeconfig": pulumi.Output.secret(kubeconfig), "repository": repository, "chart": chart,
            "version": version, "crds": None,
        }, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])))
