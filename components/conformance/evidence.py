"""The evidence a conformance run leaves, and its signature (issue 44, ADR 0056).

A run writes into one directory: PRODUCT.yaml (the checklist's format: metadata, then per section
each requirement's id, level, status, evidence, notes), junit.xml (one test case per requirement:
passed, failed, or skipped with why), logs/<id>.log (what each procedure saw) and cluster.json (the
cluster's version and the nodes' kubelet and GPU driver versions).

Signed, the directory also holds attestation.dsse.json: a DSSE envelope (github.com/secure-systems-lab/
dsse, protocol.md: the signature is over PAE(payloadType, payload) = "DSSEv1 <len> <type> <len>
<body>") whose payload is an in-toto Statement v1 (github.com/in-toto/attestation spec/v1
statement.md: `_type`, `subject` [{name, digest: {sha256}}], `predicateType`, `predicate`) naming
every file by its SHA-256. The key is Ed25519, the user's (PEM, PKCS#8); `verify` needs only the
public key. Verification fails on a bad signature, a file missing, changed or added.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import yaml
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..runtime.atomic import write_text_atomic
from .checklist import CHECKLISTS, SECTIONS, STATUSES, source

ENVELOPE = "attestation.dsse.json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://github.com/cncf/k8s-ai-conformance/PRODUCT.yaml"


@dataclass
class Result:
    """What one requirement's procedure found. `outcome`: passed (the status is proven), failed (a
    prerequisite is broken: the requirement is not met), skipped (no procedure runs it here: the
    status is declared, and `notes` says why)."""

    id: str
    status: str
    outcome: str  # passed | failed | skipped
    notes: str
    log: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"{self.id}: status {self.status!r} is none of {STATUSES}")
        if self.outcome not in ("passed", "failed", "skipped"):
            raise ValueError(f"{self.id}: outcome {self.outcome!r}")


def product(checklist: int, results: dict[str, Result], metadata: dict[str, str]) -> dict[str, Any]:
    """PRODUCT.yaml: the checklist's shape, each requirement with what its procedure found."""
    spec: dict[str, list[dict[str, Any]]] = {}
    for req in CHECKLISTS[checklist]:
        r = results.get(req.id)
        spec.setdefault(req.section, []).append({
            "id": req.id, "level": req.level,
            "status": r.status if r else "",
            "evidence": [f"junit.xml#{req.id}", f"logs/{req.id}.log"] if r else [],
            "notes": r.notes if r else "not run (--only)",
        })
    ordered = {s: spec[s] for s in SECTIONS if s in spec}
    return {"metadata": {"kubernetesVersion": f"v1.{checklist}", "checklist": source(checklist), **metadata},
            "spec": ordered}


def junit(checklist: int, results: dict[str, Result]) -> str:
    cases = [r for r in (results.get(q.id) for q in CHECKLISTS[checklist]) if r is not None]
    suite = ET.Element("testsuite", name=f"k8s-ai-conformance-1.{checklist}", tests=str(len(cases)),
                       failures=str(sum(r.outcome == "failed" for r in cases)),
                       skipped=str(sum(r.outcome == "skipped" for r in cases)),
                       time=f"{sum(r.seconds for r in cases):.1f}")
    for r in cases:
        case = ET.SubElement(suite, "testcase", classname="conformance", name=r.id, time=f"{r.seconds:.1f}")
        if r.outcome == "failed":
            ET.SubElement(case, "failure", message=r.notes).text = "\n".join(r.log)
        elif r.outcome == "skipped":
            ET.SubElement(case, "skipped", message=r.notes)
        ET.SubElement(case, "system-out").text = "\n".join(r.log)
    return ET.tostring(suite, encoding="unicode") + "\n"


def write(out: Path, checklist: int, results: dict[str, Result], metadata: dict[str, str],
          cluster: dict[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    files = [out / "PRODUCT.yaml", out / "junit.xml", out / "cluster.json"]
    write_text_atomic(files[0], yaml.safe_dump(product(checklist, results, metadata), sort_keys=False, width=120))
    write_text_atomic(files[1], junit(checklist, results))
    write_text_atomic(files[2], json.dumps(cluster, indent=2, sort_keys=True) + "\n")
    for r in results.values():
        path = out / "logs" / f"{r.id}.log"
        write_text_atomic(path, "\n".join(r.log) + "\n")
        files.append(path)
    return files


# --- the signature --------------------------------------------------------------------------------


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE's pre-authentication encoding (protocol.md)."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def _digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ENVELOPE}


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("not an Ed25519 private key (make one: openssl genpkey -algorithm ed25519)")
    return key


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key (openssl pkey -in key.pem -pubout)")
    return key


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(root: Path, key: Ed25519PrivateKey, predicate: dict[str, Any]) -> Path:
    """Sign every file under `root` (the envelope aside) into root/attestation.dsse.json."""
    statement = {"_type": STATEMENT_TYPE,
                 "subject": [{"name": n, "digest": {"sha256": d}} for n, d in _digests(root).items()],
                 "predicateType": PREDICATE_TYPE, "predicate": predicate}
    body = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    envelope = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(body).decode(),
                "signatures": [{"keyid": key_id(key.public_key()),
                                "sig": base64.b64encode(key.sign(pae(PAYLOAD_TYPE, body))).decode()}]}
    path = root / ENVELOPE
    write_text_atomic(path, json.dumps(envelope, indent=2) + "\n")
    return path


def verify(root: Path, public: Ed25519PublicKey) -> list[str]:
    """Why the bundle at `root` is not what `public`'s holder signed; [] when it is."""
    try:
        envelope = json.loads((root / ENVELOPE).read_text())
        body = base64.b64decode(envelope["payload"], validate=True)
        sigs: Iterable[dict[str, str]] = envelope["signatures"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{ENVELOPE}: not a DSSE envelope ({exc})"]
    if envelope.get("payloadType") != PAYLOAD_TYPE:
        return [f"{ENVELOPE}: payloadType {envelope.get('payloadType')!r}, expected {PAYLOAD_TYPE}"]
    good = False
    for s in sigs:
        try:
            public.verify(base64.b64decode(s["sig"], validate=True), pae(PAYLOAD_TYPE, body))
            good = True
        except (InvalidSignature, ValueError, KeyError, TypeError):
            continue
    if not good:
        return [f"{ENVELOPE}: no signature by this key (key id {key_id(public)[:16]}) over the statement"]
    statement = json.loads(body)
    signed = {s["name"]: s["digest"]["sha256"] for s in statement.get("subject", [])}
    found = _digests(root)
    problems = [f"{n}: missing" for n in sorted(set(signed) - set(found))]
    problems += [f"{n}: not signed (added after signing)" for n in sorted(set(found) - set(signed))]
    problems += [f"{n}: changed since signing" for n in sorted(set(signed) & set(found)) if signed[n] != found[n]]
    return problems
