"""The conformance evidence and its signature: the checklist's own shape, junit, and a DSSE envelope
that verifies only the bytes signed, with only the signer's key (components/conformance/evidence.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.conformance import checklist as cl
from components.conformance import evidence as ev


def results() -> dict[str, ev.Result]:
    return {
        "dra_support": ev.Result("dra_support", "Implemented", "passed", "claim used", ["allocated gpu-1"]),
        "gang_scheduling": ev.Result("gang_scheduling", "Not Implemented", "skipped", "no KAI"),
        "accelerator_metrics": ev.Result("accelerator_metrics", "Not Implemented", "failed", "no memory series"),
    }


def bundle(tmp_path: Path) -> tuple[Path, Ed25519PrivateKey]:
    out = tmp_path / "evidence"
    ev.write(out, 35, results(), {"platformName": "ck8s-gpu"}, {"serverVersion": "v1.35.1"})
    key = Ed25519PrivateKey.generate()
    ev.sign(out, key, {"checklist": cl.source(35)})
    return out, key


def test_product_yaml_keeps_the_checklists_sections_ids_and_levels(tmp_path: Path) -> None:
    out, _ = bundle(tmp_path)
    doc = yaml.safe_load((out / "PRODUCT.yaml").read_text())
    assert doc["metadata"]["kubernetesVersion"] == "v1.35"
    ids = [(s, r["id"], r["level"]) for s, rows in doc["spec"].items() for r in rows]
    assert ids == [(q.section, q.id, q.level) for q in cl.CHECKLISTS[35]]
    dra = next(r for r in doc["spec"]["accelerators"] if r["id"] == "dra_support")
    assert dra["status"] == "Implemented" and dra["evidence"] == ["junit.xml#dra_support", "logs/dra_support.log"]
    ray = next(r for r in doc["spec"]["operator"] if r["id"] == "robust_controller")
    assert ray["status"] == "" and ray["notes"] == "not run (--only)"


def test_junit_says_passed_failed_and_skipped_with_why(tmp_path: Path) -> None:
    out, _ = bundle(tmp_path)
    suite = ET.parse(out / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    failure = cases["accelerator_metrics"].find("failure")
    assert failure is not None and failure.get("message") == "no memory series"
    assert cases["gang_scheduling"].find("skipped") is not None


def test_a_signed_bundle_verifies_with_the_signers_key(tmp_path: Path) -> None:
    out, key = bundle(tmp_path)
    assert ev.verify(out, key.public_key()) == []
    statement = json.loads(base64.b64decode(json.loads((out / ev.ENVELOPE).read_text())["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert {s["name"] for s in statement["subject"]} >= {"PRODUCT.yaml", "junit.xml", "cluster.json",
                                                         "logs/dra_support.log"}


@pytest.mark.parametrize("tamper", ["flip-a-byte", "append", "remove", "add-file", "other-key", "edit-statement"])
def test_any_change_or_another_key_fails_verification(tmp_path: Path, tamper: str) -> None:
    out, key = bundle(tmp_path)
    public = key.public_key()
    if tamper == "flip-a-byte":
        data = bytearray((out / "junit.xml").read_bytes())
        data[10] ^= 0x01
        (out / "junit.xml").write_bytes(bytes(data))
    elif tamper == "append":
        with (out / "PRODUCT.yaml").open("a") as f:
            f.write(" ")
    elif tamper == "remove":
        (out / "logs" / "dra_support.log").unlink()
    elif tamper == "add-file":
        (out / "logs" / "extra.log").write_text("x")
    elif tamper == "other-key":
        public = Ed25519PrivateKey.generate().public_key()
    elif tamper == "edit-statement":
        env = json.loads((out / ev.ENVELOPE).read_text())
        statement = json.loads(base64.b64decode(env["payload"]))
        statement["subject"] = statement["subject"][:-1]
        env["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
        (out / ev.ENVELOPE).write_text(json.dumps(env))
    problems = ev.verify(out, public)
    assert problems, tamper


def test_keys_are_ed25519_pem_and_anything_else_is_named(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    assert ev.key_id(ev.load_private_key(pem).public_key()) == ev.key_id(key.public_key())
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with pytest.raises(ValueError, match="not an Ed25519 private key"):
        ev.load_private_key(other)


def test_a_status_outside_the_checklists_words_is_refused() -> None:
    with pytest.raises(ValueError, match="status"):
        ev.Result("x", "Done", "passed", "")


def test_the_checklist_of_a_minor_is_its_own_or_the_nearest_older() -> None:
    assert [cl.nearest(m) for m in (32, 33, 35, 36, 37)] == [33, 33, 35, 36, 36]
