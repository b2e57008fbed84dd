"""The fake commands' fork server (tests/fakes/k8s_snap/forkserver.py) behaves as the process it
replaced: exit status, stderr, stdin, an exec'd program's status, a signal from `timeout` reaching
the call and what it runs, and the old path without it. (Every node scenario of the slow tier runs
through it too: 4,300 calls.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.k8s_snap import forkserver

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "tests/fakes/k8s_snap/client.py"


@pytest.fixture(scope="module")
def server() -> str:
    path = forkserver.ensure_started()
    assert path is not None
    return path


def call(server: str | None, *argv: str, cwd: Path | None = None, stdin: str = "",
         timeout: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "FAKE_INSTANCE": "i-0", "FAKE_REGION": "r",
           "FAKE_WORLD": "/nonexistent", "A_VARIABLE": "its value", **({"FAKE_FORKSERVER": server} if server else {})}
    cmd = [sys.executable, "-S", str(CLIENT), *argv]
    return subprocess.run((["timeout", timeout] if timeout else []) + cmd, env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_status_and_stderr_are_the_calls(server: str) -> None:
    r = call(server, "no-such-tool")
    assert (r.returncode, r.stdout, r.stderr) == (127, "", "fake: unknown tool no-such-tool\n")


@pytest.mark.parametrize("server_on", [True, False])
def test_an_execd_program_gets_the_callers_descriptors_and_its_status_is_the_calls(
        server: str, server_on: bool, tmp_path: Path) -> None:
    """The fake curl execs the real one: stdin uploaded to a file:// URL, status 0; then a missing
    file's status 37 (CURLE_FILE_COULDNT_READ_FILE)."""
    r = call(server if server_on else None, "curl", "-sS", "-T", "-", f"file://{tmp_path}/uploaded",
             stdin="from stdin\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "uploaded").read_text() == "from stdin\n"
    r = call(server if server_on else None, "curl", "-sS", f"file://{tmp_path}/missing", cwd=tmp_path)
    assert r.returncode == 37 and "curl: (37)" in r.stderr, (r.returncode, r.stderr)


def test_timeout_ends_the_call_and_the_program_it_runs(server: str, tmp_path: Path) -> None:
    marker = f"file:///dev/zero#{tmp_path.name}"
    r = call(server, "curl", "-sS", "-o", "/dev/null", marker, timeout="1")
    assert r.returncode == 124, (r.returncode, r.stderr)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and tmp_path.name in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                                                          text=True).stdout:
        time.sleep(0.1)
    assert tmp_path.name not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout


def test_without_a_server_the_client_runs_the_call_itself() -> None:
    r = call("/nonexistent/socket", "no-such-tool")
    assert (r.returncode, r.stderr) == (127, "fake: unknown tool no-such-tool\n")
