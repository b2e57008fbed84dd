"""Recognise secret material in text (pure): private keys, kubeconfig credentials, AWS keys, tokens.

Patterns aim at the material this project handles (cluster CA keys, admin kubeconfigs, k8s join
tokens, the CAPI-style join auth token) and at common leaks (static AWS keys, bearer tokens).
Each finding names a kind, never the value: policy messages end up in CI logs.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

_PEM_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_KUBECONFIG = re.compile(r"(?m)^\s*(?:kind:\s*Config\b|users:\s*$|current-context:)")
_KUBE_CRED = re.compile(
    r"(?m)^\s*-?\s*(client-key-data|token|password)\s*:\s*['\"]?([^\s'\"#]+)"
)
_AWS_ACCESS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_AWS_SECRET = re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")
_KUBEADM_TOKEN = re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b")
_BEARER = re.compile(r"(?i)\bauthorization:\s*bearer\s+([A-Za-z0-9._~+/-]{16,}=*)")
# A literal (not a shell variable or command substitution) handed to commands that take secrets.
_LITERAL_ARG = r"\s+['\"]?(?!\$)([A-Za-z0-9+/=._-]{16,})"
_JOIN_CMD = re.compile(r"\bk8s\s+join-cluster" + _LITERAL_ARG)
_CAPI_TOKEN = re.compile(r"(?i)(?:capi-auth-token:|x-capi\s+set-auth-token)" + _LITERAL_ARG)
_B64_BLOB = re.compile(r"[A-Za-z0-9+/]{60,}={0,2}")
# Placeholders that look like values but are not secrets.
_NOT_A_VALUE = re.compile(r"^(?:\$|\{\{|<|\[secret|REDACTED|\*+$)", re.IGNORECASE)


def findings(text: str) -> list[str]:
    """Kinds of secret material in `text` (empty when none). Order is stable."""
    if not text or not isinstance(text, str):
        return []
    found: list[str] = []
    if _PEM_KEY.search(text):
        found.append("PEM private key")
    if _KUBECONFIG.search(text):
        creds = sorted({m.group(1) for m in _KUBE_CRED.finditer(text) if not _NOT_A_VALUE.match(m.group(2))})
        if creds:
            found.append(f"kubeconfig credentials ({', '.join(creds)})")
    if _AWS_SECRET.search(text):
        found.append("AWS secret access key")
    elif _AWS_ACCESS_KEY_ID.search(text):
        found.append("static AWS access key id")
    if _KUBEADM_TOKEN.search(text) and "token" in text.lower():
        found.append("bootstrap token")
    if _BEARER.search(text):
        found.append("bearer token")
    if _JOIN_CMD.search(text) or _has_k8s_join_token(text):
        found.append("Canonical Kubernetes join token")
    if _CAPI_TOKEN.search(text):
        found.append("join auth token")
    return found


def _has_k8s_join_token(text: str) -> bool:
    """`k8s get-join-token` prints base64 of a JSON document carrying the join secret and the
    cluster certificate fingerprint: recognise such blobs wherever they are pasted."""
    for blob in _B64_BLOB.findall(text):
        try:
            doc = json.loads(base64.b64decode(blob + "=" * (-len(blob) % 4)))
        except (binascii.Error, ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and "secret" in doc and ("fingerprint" in doc or "join_addresses" in doc):
            return True
    return False
