"""k8sd's HTTPS API on :6400 for the simulated control planes: `POST /1.0/x/capi/generate-join-token`.

A control plane listens on <its address>:6400 only once it has bootstrapped or joined (microcluster
binds its network address then; before that, only the unix socket): connection refused before.
The supervisor thread starts and stops a listener per control plane as the world changes.

Rules (pkg/k8sd/api/endpoints.go, capi_access_handler.go, cluster_tokens.go; utils/json.go strict
decoder; lxd/microcluster response envelopes):
- header `capi-auth-token` missing -> 401 `missing header "capi-auth-token"`; no token registered
  yet or another value -> 401 `invalid token`;
- body `{"name": str, "worker": bool, "ttl": int nanoseconds}` decoded strictly: unknown field ->
  400 `failed to parse request: json: unknown field "<f>"`;
- success: `{"type":"sync","status":"Success","status_code":200,...,"metadata":{"token":...}}`.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.fakes.k8s_snap import k8sd, tracks, world

PORT = 6400
PATH = "/1.0/x/capi/generate-join-token"


def _envelope(status: int, error: str = "", metadata: Any = None) -> dict[str, Any]:
    if status == 200:
        return {"type": "sync", "status": "Success", "status_code": 200, "operation": "", "error_code": 0,
                "error": "", "metadata": metadata}
    return {"type": "error", "status": "", "status_code": 0, "operation": "", "error_code": status,
            "error": error, "metadata": None}


def handle(world_dir: Path, instance: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
    token = headers.get("capi-auth-token", "")
    if not token:
        return 401, _envelope(401, 'missing header "capi-auth-token"')
    try:
        request = json.loads(body or b"{}")
    except ValueError as exc:
        return 400, _envelope(400, f"failed to parse request: {exc}")
    unknown = sorted(set(request) - {"name", "worker", "ttl"})
    if unknown:
        return 400, _envelope(400, f'failed to parse request: json: unknown field "{unknown[0]}"')
    if not isinstance(request.get("ttl", 0), int):
        return 400, _envelope(400, "failed to parse request: json: cannot unmarshal string into Go struct field "
                                   "GetJoinTokenRequest.ttl of type time.Duration")
    with world.locked(world_dir) as state:
        cluster = state.get("cluster")
        if cluster is None or cluster.get("capi_token") != token:
            world.record(state, instance, "k8sd generate-join-token refused: invalid token")
            return 401, _envelope(401, "invalid token")
        me = state["instances"][instance]
        try:
            minted = k8sd.mint(state, tracks.installed(me["node"]), str(request.get("name", "")),
                               bool(request.get("worker", False)), int(request.get("ttl", 0)) / 1e9)
        except k8sd.K8sdError as exc:
            return exc.status, _envelope(exc.status, f"failed to create token: {exc}")
        world.record(state, instance, f"k8sd generate-join-token worker={bool(request.get('worker'))}")
    return 200, _envelope(200, metadata={"token": minted})


_CERT_DIR = Path(tempfile.mkdtemp(prefix="k8sd-fake-"))


def self_signed() -> tuple[Path, Path]:
    """One self-signed key pair per test process (RSA key generation is slow): curl -k ignores it."""
    cert, key = _CERT_DIR / "k8sd.crt", _CERT_DIR / "k8sd.key"
    if not cert.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=k8sd-fake", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


class Supervisor:
    """Keeps one listener per initialized, running control plane of the world."""

    def __init__(self, world_dir: Path) -> None:
        self.world_dir = world_dir
        cert, key = self_signed()
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert, key)
        self.servers: dict[str, ThreadingHTTPServer] = {}
        self.errors: list[str] = []  # a listener that could not start: Fleet.close() reports them
        self._failed: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for server in self.servers.values():
            server.shutdown()
            server.server_close()

    def _server(self, instance: str, ip: str) -> ThreadingHTTPServer:
        world_dir = self.world_dir

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != PATH:
                    status, doc = 404, _envelope(404, "not found")
                else:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    status, doc = handle(world_dir, instance, headers, body)
                payload = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_: Any) -> None:
                pass

        server = ThreadingHTTPServer((ip, PORT), Handler)
        server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            try:
                state = world.read(self.world_dir)
            except (OSError, ValueError):
                continue
            wanted = {iid: i["ip"] for iid, i in state["instances"].items()
                      if i["state"] == "running" and i["node"].get("role") == "control-plane"}
            for iid in list(self.servers):
                if iid not in wanted:
                    gone = self.servers.pop(iid)
                    gone.shutdown()
                    gone.server_close()
            for iid, ip in wanted.items():
                if iid not in self.servers and iid not in self._failed:
                    try:
                        self.servers[iid] = self._server(iid, ip)
                    except OSError as exc:
                        self._failed.add(iid)
                        self.errors.append(f"k8sd of {iid} on {ip}:{PORT}: {exc}")
