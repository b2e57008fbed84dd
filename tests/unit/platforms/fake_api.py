"""A scripted stand-in for a Kubernetes API server on loopback (plain HTTP), for the poll tests.

Each path answers from a script: a list of (status, body) replies consumed in order, the last
one repeated, or a callable returning (status, body) for each request (a stand-in's live state).
Requests are recorded with their Authorization header.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "fake-token-0123456789"

Reply = tuple[int, Any]


class FakeApi:
    def __init__(self, routes: dict[str, list[Reply] | Callable[[], Reply]]) -> None:
        self.routes = {path: replies if callable(replies) else list(replies) for path, replies in routes.items()}
        self.requests: list[tuple[str, str]] = []  # (path, authorization header)
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                with api._lock:
                    api.requests.append((path, self.headers.get("Authorization", "")))
                    script = api.routes.get(path)
                    if callable(script):
                        status, body = script()
                    else:
                        status, body = (script.pop(0) if len(script) > 1 else script[0]) if script else (404, {})
                data = body if isinstance(body, str) else json.dumps(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def kubeconfig(self) -> str:
        return f"""apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {{server: "{self.url}"}}
users:
- name: admin
  user: {{token: {TOKEN}}}
contexts:
- name: fake
  context: {{cluster: fake, user: admin}}
current-context: fake
"""

    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]

    def __enter__(self) -> FakeApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def node(name: str, ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def node_list(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "NodeList", "apiVersion": "v1", "items": list(nodes)}
