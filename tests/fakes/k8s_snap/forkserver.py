"""A fork server for the fake commands: each call forks a process that has imported them already.

Every fake `snap`, `k8s`, `aws`, `cloud-init`, `systemctl`, `kubectl` and `curl` call of the node
scenarios was a new Python process importing the fakes: about 85 ms of CPU each before it did
anything, and the slow tier makes some 4,300 of them (2026-12-07: 512 CPU-seconds for the tier, most
of it those imports). The shims (main.py `shim`) now run `client.py`, which hands this server its
argv, environment, working directory and its stdin, stdout and stderr (SCM_RIGHTS); the server
forks, the child becomes that call (same descriptors, environment, directory and argv) and runs
main.py's `main`, and its exit status goes back to the client, which exits with it. What a call
does is unchanged: the same code, the same world file and its lock, a fresh process per call
(`random` reseeds itself after a fork). Signals sent to the client (`timeout`, an interrupted node
script) are passed on to the call, and a call whose client is gone is killed, as the call itself
would have died with its process.

Without a server (CK8S_FAKE_NO_FORKSERVER=1, or the socket gone) the client execs the old path.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

# The wire format lives in the client, which imports only the standard library.
from tests.fakes.k8s_snap.client import HEADER, SIGNALLED, STATUS, exact

ENV = "FAKE_FORKSERVER"  # the socket's path, on the shim's command line and in the test process
DISABLE_ENV = "CK8S_FAKE_NO_FORKSERVER"

_server: subprocess.Popen[bytes] | None = None


def ensure_started() -> str | None:
    """Start this process's server once (idempotent); its socket's path, or None when disabled."""
    global _server
    if os.environ.get(DISABLE_ENV):
        os.environ.pop(ENV, None)
        return None
    if _server is not None and _server.poll() is None:
        return os.environ[ENV]
    directory = tempfile.mkdtemp(prefix="ck8s-fakes-")
    path = f"{directory}/socket"
    repo = str(Path(__file__).resolve().parents[3])
    with open(f"{directory}/server.log", "wb") as log:
        _server = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.k8s_snap.forkserver", path],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            env={**os.environ, "PYTHONPATH": repo}, start_new_session=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        if _server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the fakes' fork server did not start: {Path(directory, 'server.log').read_text()}")
        time.sleep(0.01)
    os.environ[ENV] = path
    atexit.register(stop)
    return path


def stop() -> None:
    global _server
    if _server is not None:
        _server.terminate()
        try:
            _server.wait(10)
        except subprocess.TimeoutExpired:
            _server.kill()
        _server = None
        shutil.rmtree(Path(os.environ.pop(ENV)).parent, ignore_errors=True)


def _read_request(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    data += exact(conn, HEADER.size - len(data))
    (size,) = HEADER.unpack_from(data)
    body = data[HEADER.size:]
    body += exact(conn, size - len(body))
    if len(body) < size:
        raise EOFError("client gone")
    return json.loads(body), list(fds)


def _exec_as_child(path: str, args: list[str]) -> None:
    """os.execv in a call: an exec would replace the call before it sends its status, so run the
    program as its child on the same descriptors and exit as it exits."""
    code = subprocess.call(list(args), executable=path)
    raise SystemExit(code if code >= 0 else SIGNALLED - code)


def _call(conn: socket.socket) -> None:
    """In the forked child: become the client's call, run it, send its status."""
    from tests.fakes.k8s_snap import main as fake_main

    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the server's own handler is not the call's
    # Its own process group, which the client signals: what it starts (the real curl) is reached too,
    # as `timeout` reaches a command's children by signalling its group.
    os.setpgid(0, 0)
    request, fds = _read_request(conn)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        if fd > 2:
            os.close(fd)
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
    sys.argv = [fake_main.__file__ or "main.py", *argv]
    conn.sendall(STATUS.pack(os.getpid()))

    def client_gone() -> None:
        try:
            alive = conn.recv(1)
        except OSError:
            alive = b""
        if not alive:
            os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=client_gone, daemon=True).start()
    os.execv = _exec_as_child  # type: ignore[assignment]  # the fake curl execs the real one
    status = 0
    try:
        status = fake_main.main(argv)
    except SystemExit as exc:
        if exc.code is None:
            status = 0
        elif isinstance(exc.code, int):
            status = exc.code
        else:
            print(exc.code, file=sys.stderr)
            status = 1
    except KeyboardInterrupt:
        status = SIGNALLED + signal.SIGINT  # as an uncaught one ends a Python process
    except BaseException:
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):
            stream.flush()
    try:
        conn.sendall(STATUS.pack(status if status >= SIGNALLED else status & 0xFF))
    finally:
        os._exit(0)


def serve(path: str) -> None:
    # Everything a call may import, imported once here: the children inherit it.
    from tests.fakes.k8s_snap import aws_cli, k8s_cli, kubectl_cli, main, systemctl  # noqa: F401

    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    os.rename(path + ".tmp", path)  # the socket appears ready to connect to, never half-made
    server.listen(128)
    server.settimeout(1.0)
    try:
        while os.getppid() == parent:  # the test process that started it is gone: so is it
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            pid = os.fork()
            if pid == 0:
                try:
                    server.close()
                    if os.fork() == 0:  # the grandchild runs the call; nobody waits for it
                        _call(conn)
                finally:
                    os._exit(0)
            conn.close()
            os.waitpid(pid, 0)
    finally:
        server.close()
        with contextlib.suppress(OSError):
            os.unlink(path)


if __name__ == "__main__":
    serve(sys.argv[1])
