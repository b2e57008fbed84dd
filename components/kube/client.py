"""Kubernetes API clients built from a kubeconfig held in memory (never written to a shared path)."""

from __future__ import annotations

from kubernetes import client, config

from .errors import ApiFailure, call_failure
from .kubeconfig import parse_kubeconfig

# Per-request limit: a hung TCP connection must not eat a readiness gate's whole budget.
REQUEST_TIMEOUT_SECONDS = 10.0


def api_client(kubeconfig: str, *, context: str | None = None) -> client.ApiClient:
    """An ApiClient for the kubeconfig text. Raises ValueError with a plain message when unusable."""
    doc = parse_kubeconfig(kubeconfig)
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise ValueError("kubeconfig has no clusters")
    cfg = client.Configuration()
    config.load_kube_config_from_dict(doc, context=context, client_configuration=cfg, persist_config=False)
    return client.ApiClient(cfg)


def http_get(api: client.ApiClient, path: str, timeout: float = REQUEST_TIMEOUT_SECONDS) -> str | ApiFailure:
    """GET `path` with the client's credentials: the body of a 2xx answer, else the failure (returned,
    not raised, so a poll's verdict is a pure function of what came back)."""
    try:
        response = api.call_api(
            path, "GET", auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout
        )
        return bytes(response.data).decode("utf-8", "replace")
    except Exception as exc:  # the client raises ApiException for 4xx/5xx, urllib3/ssl/socket errors otherwise
        return call_failure(exc)


def unreachable_reason(kubeconfig: str, *, timeout_seconds: float = 5.0) -> str | None:
    """Why the cluster's API cannot be reached (None: it answers). Any HTTP answer counts as an
    answer, a 401 too: the server is there, so its state must not be forgotten."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    try:
        api = api_client(kubeconfig)
    except (ValueError, KeyError, TypeError) as exc:  # the provider cannot use it either
        return f"the kubeconfig is unusable: {exc}"
    api.configuration.retries = 0
    server = api.configuration.host
    try:
        client.VersionApi(api).get_code(_request_timeout=timeout_seconds)
    except ApiException:
        return None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        return f"{server} does not answer ({type(exc).__name__})"
    finally:
        api.close()
    return None

