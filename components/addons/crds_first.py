"""CRDs first: a chart that keeps its CRDs in `crds/` with no upgrade mechanism of its own
(`manual=True` in components/addons/crds.py) gets the CRDs of the release's version applied
before the release, because Helm installs `crds/` once and never upgrades it (helm v3.18
pkg/action/install.go installCRDs, pkg/action/upgrade.go).

`CrdsFirst` pulls the chart at the release's repository and version with Helm's own library
(helm-python-sdk `pull`, `Chart.crds`), then server-side applies each CustomResourceDefinition
(field manager `ck8s-gpu`, conflicts forced, as the upstream guides' `kubectl apply
--server-side --force-conflicts` does). On a fresh cluster Helm's install then finds them present
and skips them. Deleting the resource leaves the CRDs: deleting a CRD deletes every object of it.

A second source, for CRDs no chart carries: a release manifest at a URL (`manifest`, the Gateway
API's `standard-install.yaml` for the inference gateway, ADR 0052). It may hold only CRDs and the
ValidatingAdmissionPolicy and binding such bundles ship to guard their own upgrades (Gateway API
v1.6.1 config/crd/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml); each CRD must carry
the bundle version asked for (`gateway.networking.k8s.io/bundle-version`, `expect_annotation`), so a
mirror serving another release is refused before anything is applied.

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


# What a release manifest may hold besides CRDs: the admission policy guarding their upgrades.
MANIFEST_POLICY_KINDS = (("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
                         ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"))


def manifest_objects(text: str, expect_annotation: tuple[str, str] | None = None,
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(CRDs, admission policies) of a release manifest, in file order; CrdError naming every
    document of another kind, and every CRD whose `expect_annotation` (key, value) differs."""
    crds: list[dict[str, Any]] = []
    policies: list[dict[str, Any]] = []
    problems: list[str] = []
    for i, doc in enumerate(yaml.safe_load_all(text)):
        if not doc:
            continue
        if not isinstance(doc, dict):
            problems.append(f"document {i + 1} is not an object")
            continue
        kind = (doc.get("apiVersion"), doc.get("kind"))
        name = (doc.get("metadata") or {}).get("name")
        if kind == CRD_API:
            crds.append(doc)
            if expect_annotation is not None:
                got = ((doc.get("metadata") or {}).get("annotations") or {}).get(expect_annotation[0])
                if got != expect_annotation[1]:
                    problems.append(f"CRD {name}: {expect_annotation[0]} is {got!r}, expected {expect_annotation[1]!r}")
        elif kind in MANIFEST_POLICY_KINDS:
            policies.append(doc)
        else:
            problems.append(f"document {i + 1} ({doc.get('kind')} {name}) is neither a CustomResourceDefinition nor "
                            "a ValidatingAdmissionPolicy (binding)")
    if not crds:
        problems.append("no CustomResourceDefinition in it")
    if problems:
        raise CrdError("; ".join(problems))
    return crds, policies


def fetch(url: str, timeout: float = 60) -> str:
    """The manifest at an https/http URL (redirects followed: release assets redirect to storage)."""
    import urllib.request

    if not url.startswith(("https://", "http://")):
        raise CrdError(f"{url!r} is not an http(s) URL")
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        body: bytes = answer.read()
    return body.decode()


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


def apply(kubeconfig: str, crds: list[dict[str, Any]], establish_seconds: float = ESTABLISH_SECONDS,
          policies: list[dict[str, Any]] | None = None) -> list[str]:
    """Server-side apply each CRD, then wait until all of them serve their kinds: a release or a
    custom resource that depends on this resource may be created the next moment. A manifest's
    admission policies go first: they judge the CRDs' own apply."""
    import time

    from kubernetes import client

    from ..kube.client import api_client

    api = client.ApiextensionsV1Api(api_client(kubeconfig))
    admission = client.AdmissionregistrationV1Api(api.api_client)
    for policy in policies or []:
        patch = (admission.patch_validating_admission_policy if policy["kind"] == "ValidatingAdmissionPolicy"
                 else admission.patch_validating_admission_policy_binding)
        patch(policy["metadata"]["name"], policy, field_manager=FIELD_MANAGER, force=True,
              _content_type="application/apply-patch+yaml")
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
    manifest = props.get("manifest")
    try:
        if manifest:
            annotation = props.get("expectAnnotation")
            crds, policies = manifest_objects(fetch(manifest), tuple(annotation) if annotation else None)
            names = apply(props["kubeconfig"], crds, policies=policies)
        else:
            names = apply(props["kubeconfig"], chart_crds(pull(props["repository"], props["chart"], props["version"])))
    except Exception as exc:  # the engine shows this message, naming the source and the cause
        source = manifest or f"{props['chart']} {props['version']} from {props['repository']}"
        raise CrdError(f"CRDs of {source}: {exc}") from None
    return {**props, "crds": names}


class _Provider(pulumi.dynamic.ResourceProvider):
    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=uuid.uuid4().hex, outs=_run(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # A new kubeconfig (rotated credentials) is not a reason to apply again.
        keys = [k for k in ("repository", "chart", "version", "manifest", "expectAnnotation")
                if olds.get(k) != news.get(k)]
        return pulumi.dynamic.DiffResult(changes=bool(keys))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=_run(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None  # CRDs stay: removing one would delete every object of its kind


class CrdsFirst(pulumi.dynamic.Resource, module="ck8s-gpu", name="CrdsFirst"):  # type: ignore[misc,call-arg]
    """The chart's `crds/` at `version`, or a release `manifest`'s CRDs, applied before the release
    (see the module docstring)."""

    crds: pulumi.Output[list[str]]

    def __init__(self, name: str, kubeconfig: pulumi.Input[str], *, version: str, repository: str | None = None,
                 chart: str | None = None, manifest: str | None = None,
                 expect_annotation: tuple[str, str] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        if (manifest is None) == (chart is None or repository is None):
            raise ValueError(f"CrdsFirst {name}: either a chart and its repository, or a manifest")
        props: dict[str, Any] = {"kubeconfig": pulumi.Output.secret(kubeconfig), "repository": repository,
                                 "chart": chart, "version": version, "crds": None}
        if manifest is not None:  # absent, not null, for a chart: states written before manifests stay equal
            props |= {"manifest": manifest, "expectAnnotation": list(expect_annotation or ()) or None}
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(_Provider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
