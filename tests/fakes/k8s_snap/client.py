"""The fake commands' shim client (forkserver.py): hand the call to the fork server, exit as it did.

Run as `python -S client.py TOOL ARGS...`: no site, only the standard library, so a call costs a few
milliseconds here instead of the fakes' imports. Without a reachable server it becomes the old call,
`python -m tests.fakes.k8s_snap.main TOOL ARGS...` (the shim sets PYTHONPATH).
"""

import array
import contextlib
import json
import os
import signal
import socket
import struct
import sys

# The wire format, which forkserver.py imports from here: a request is HEADER (its length) and
# JSON, with the caller's stdin, stdout and stderr beside it; the answers are STATUS-packed, the
# call's pid and then its exit status, SIGNALLED + N when it died by signal N.
HEADER = struct.Struct("!I")
STATUS = struct.Struct("!i")
SIGNALLED = 256


def exact(sock: socket.socket, size: int) -> bytes:
    """`size` bytes, or fewer when the peer closed first."""
    data = b""
    while len(data) < size:
        more = sock.recv(size - len(data))
        if not more:
            return data
        data += more
    return data


def main() -> None:
    argv = sys.argv[1:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(os.environ["FAKE_FORKSERVER"])
    except (KeyError, OSError):
        os.execv(sys.executable, [sys.executable, "-m", "tests.fakes.k8s_snap.main", *argv])
    body = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    data = HEADER.pack(len(body)) + body
    sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    if sent < len(data):
        sock.sendall(data[sent:])  # a large environment: the rest, after the descriptors went
    raw = exact(sock, STATUS.size)
    if len(raw) < STATUS.size:
        sys.exit(1)
    (pid,) = STATUS.unpack(raw)
    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signum)  # the call leads its own group (forkserver._call)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    raw = exact(sock, STATUS.size)
    if len(raw) == STATUS.size:
        (status,) = STATUS.unpack(raw)
        if status < SIGNALLED:
            sys.exit(status)
        died_by = status - SIGNALLED
    else:  # the call died without a status: by the signal passed on, or killed
        died_by = forwarded[-1] if forwarded else signal.SIGKILL
    if died_by != signal.SIGKILL:
        signal.signal(died_by, signal.SIG_DFL)
    os.kill(os.getpid(), died_by)


if __name__ == "__main__":
    main()
