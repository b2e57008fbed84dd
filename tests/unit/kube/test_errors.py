"""The one model of a failed REST call, and its mapping from what the kubernetes client raises."""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from components.kube.errors import ApiFailure, KubeError, KubeUnreachable, answered, call_failure

STATUS_403 = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
              "message": 'configmaps is forbidden: User "u" cannot create'}


class _Resp:
    """What ApiException reads from an HTTP response."""

    def __init__(self, status: int, data: bytes, reason: str) -> None:
        self.status, self.data, self.reason = status, data, reason

    def getheaders(self) -> dict[str, str]:
        return {}


def test_an_answer_with_a_status_body_carries_its_message_and_reason() -> None:
    exc = ApiException(http_resp=_Resp(403, json.dumps(STATUS_403).encode(), "Forbidden"))
    failure = call_failure(exc)
    assert isinstance(failure, KubeError) and failure.answered
    assert (failure.status, failure.reason) == (403, "Forbidden")
    assert failure.message == 'configmaps is forbidden: User "u" cannot create'
    assert str(failure) == '403: configmaps is forbidden: User "u" cannot create'
    assert json.loads(failure.body) == STATUS_403


@pytest.mark.parametrize(("body", "message"), [
    ("[-]etcd failed: reason withheld", "[-]etcd failed: reason withheld"),  # /readyz answers in text
    ('{"kind":"Status"}', '{"kind":"Status"}'),  # a Status without a message: the body itself
    ("x" * 600, "x" * 500),  # a long non-JSON body is cut
    ("", "Service Unavailable"),  # no body: the HTTP reason
])
def test_an_answer_without_a_status_message(body: str, message: str) -> None:
    failure = answered(503, body, "Service Unavailable")
    assert (failure.status, failure.message, failure.body) == (503, message, body)


def test_no_answer_is_unreachable_tls_included() -> None:
    refused = call_failure(urllib3.exceptions.MaxRetryError(None, "/readyz", "Connection refused"))  # type: ignore[arg-type]
    assert isinstance(refused, KubeUnreachable) and refused.status is None and not refused.answered
    assert str(refused).startswith("MaxRetryError: ") and not refused.permanent
    # The client reports a TLS failure as ApiException with status 0: no answer came.
    tls = call_failure(ApiException(status=0, reason="SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED]"))
    assert isinstance(tls, KubeUnreachable) and tls.tls and tls.permanent
    assert tls.detail().startswith("TLS verification failed (wrong CA in the kubeconfig?): ApiException")


def test_answered_and_unreachable_are_told_apart_by_type() -> None:
    # Callers handle "the server said no" (404: gone) apart from "no answer": neither catches the other.
    assert issubclass(KubeError, ApiFailure) and issubclass(KubeUnreachable, ApiFailure)
    assert not issubclass(KubeUnreachable, KubeError) and not issubclass(KubeError, KubeUnreachable)
    with pytest.raises(KubeUnreachable):
        try:
            raise KubeUnreachable("gone")
        except KubeError:
            pytest.fail("an unreachable server is not an error answer")


@pytest.mark.parametrize(("failure", "detail", "permanent"), [
    (KubeError(401, "Unauthorized", body='{"message":\n "Unauthorized"}'),
     "HTTP 401 Unauthorized: the kubeconfig's credentials were rejected ({\"message\": \"Unauthorized\"})", True),
    (KubeError(403, "no", body="no"), "HTTP 403 Forbidden: the kubeconfig's user lacks permission (no)", True),
    (KubeError(500, "boom", body="boom " * 100), "HTTP 500: " + ("boom " * 100)[:300], False),
    (KubeUnreachable("ReadTimeoutError: read timed out"), "no response: ReadTimeoutError: read timed out", False),
])
def test_what_a_gate_reports_and_whether_waiting_helps(failure: ApiFailure, detail: str, permanent: bool) -> None:
    assert failure.detail() == detail
    assert failure.permanent is permanent
