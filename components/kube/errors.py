"""A failed Kubernetes REST call, as one model: the API server answered with an error status
(`KubeError`), or no answer came at all (`KubeUnreachable`: DNS, TCP, TLS, timeout).

The smoke gateway raises these; the readiness gates (ApiReady, WaitFor) get them as values and
turn them into poll verdicts. `call_failure` is the one mapping from what the kubernetes client
raises. Pure: no kubernetes import.
"""

from __future__ import annotations

import json
from typing import Any

# Markers of a TLS verification failure in urllib3/ssl errors (and the client's ApiException status 0).
_TLS_MARKERS = ("CERTIFICATE_VERIFY_FAILED", "SSLError", "certificate verify failed")


class ApiFailure(Exception):
    """One failed REST call. `status` is the HTTP status, None when the server did not answer;
    `reason` the Status reason (or HTTP reason phrase); `message` the Status message, or what
    went wrong on the way; `body` the answer as sent (empty without one)."""

    def __init__(self, status: int | None, message: str, *, reason: str = "", body: str = "") -> None:
        self.status, self.message, self.reason, self.body = status, message, reason, body
        super().__init__(message if status is None else f"{status}: {message}")

    @property
    def answered(self) -> bool:
        return self.status is not None

    @property
    def tls(self) -> bool:
        return not self.answered and any(m in self.message for m in _TLS_MARKERS)

    @property
    def permanent(self) -> bool:
        """Waiting is unlikely to help: credentials rejected, permission missing, CA mismatch."""
        return self.status in (401, 403) or self.tls

    def detail(self) -> str:
        """What a readiness gate reports for this failure (with the likely cause when known)."""
        if not self.answered:
            if self.tls:
                return f"TLS verification failed (wrong CA in the kubeconfig?): {self.message}"
            return f"no response: {self.message}"
        body = " ".join(self.body.split())[:300]
        if self.status == 401:
            return f"HTTP 401 Unauthorized: the kubeconfig's credentials were rejected ({body})"
        if self.status == 403:
            return f"HTTP 403 Forbidden: the kubeconfig's user lacks permission ({body})"
        return f"HTTP {self.status}: {body}"


class KubeError(ApiFailure):
    """The API server answered with an error status."""

    status: int

    def __init__(self, status: int, message: str, *, reason: str = "", body: str = "") -> None:
        super().__init__(status, message, reason=reason, body=body)


class KubeUnreachable(ApiFailure):
    """No answer from the API server (DNS, TCP, TLS, timeout)."""

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


def answered(status: int, body: str | bytes | None, reason: str = "") -> KubeError:
    """The error an answer stands for: the message and reason of its Status body when it is one."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    message = text[:500] or reason or "error"
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        message = str(doc.get("message") or text)
        reason = str(doc.get("reason") or reason)
    return KubeError(status, message, reason=reason, body=text)


def call_failure(exc: BaseException) -> ApiFailure:
    """What the kubernetes client raised, as the model: an ApiException with an HTTP status is an
    answer; anything else (urllib3, ssl, socket, and ApiException status 0 for TLS) is no answer."""
    status: Any = getattr(exc, "status", None)
    if isinstance(status, int) and status > 0:
        return answered(status, getattr(exc, "body", None), str(getattr(exc, "reason", "") or ""))
    return KubeUnreachable(f"{type(exc).__name__}: {exc}")
