"""Every subcommand, really run, against what a hostile environment does (issue 46): no AWS
credentials, no Pulumi CLI, an output that cannot be written, a reader that closed stdout, an empty
and a malformed stack file, and Ctrl-C. Each ends in one message (none for a closed stdout) and an
exit code of `ck8s-gpu --help`'s table (components/cli/main.py EXIT_CODES), never a traceback, a
hang or half a file.

test_cli_exit_codes.py checks the boundary with each command's function swapped for one that
raises; here the commands' own code runs, as `python -m components` in a subprocess. The rows of
one subcommand run side by side, so the module stays well under a minute on two cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.cli import main as cli

pytestmark = pytest.mark.slow  # about 45 CPU-seconds of CLI runs in all, 40-45 s on two cores

ROOT = Path(__file__).resolve().parents[2]
OK, FAILED, BAD, INTERRUPTED, CLOSED = (cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_BAD_INPUT, cli.EXIT_INTERRUPTED,
                                        cli.EXIT_CLOSED_OUTPUT)
TIMEOUT = 120  # a run still going then has hung
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
"""


@dataclass(frozen=True)
class Row:
    """One abuse of one subcommand. `code`: what it exits with; with `sigint`, what it exits with
    when it finishes before the Ctrl-C lands (130 and "interrupted" are accepted at every delay)."""

    abuse: str
    argv: tuple[str, ...]
    code: int
    says: tuple[str, ...] = ()
    closed_stdout: bool = False
    sigint: tuple[float, ...] = ()
    out: str | None = None  # a folder the run writes in: never a temp file left in it
    absent: Path | None = None  # a file the run must not write


@dataclass
class Run:
    row: Row
    delay: float | None
    code: int
    stdout: str
    stderr: str
    seconds: float
    hung: bool = False
    files: list[str] = field(default_factory=list)
    wrote_absent: bool = False


@dataclass(frozen=True)
class World:
    """One folder for every run (its working directory): stack files, a blocked path, clusters."""

    dir: Path
    refused: int  # a port nothing listens on
    silent: int  # a port that accepts and never answers: a request there waits for ever

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PULUMI_"))}
        base.pop("PYTHONUNBUFFERED", None)  # a user's stdout is block-buffered: a closed pipe shows at the flush
        return {**base, "PYTHONPATH": str(ROOT), "PATH": str(self.dir / "bin"),  # no `pulumi` on it
                # no credentials anywhere, and the EC2 metadata endpoint not even tried
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(self.dir / "none"),
                "AWS_SHARED_CREDENTIALS_FILE": str(self.dir / "none"), "AWS_DEFAULT_REGION": "us-east-1"}


def _world(base: Path, refused: int, silent: int) -> World:
    stacks = base / "stacks"
    stacks.mkdir()
    (base / "bin").mkdir()
    (stacks / "Pulumi.empty.yaml").write_text("")
    (stacks / "Pulumi.bad.yaml").write_text("config:\n  ck8s-gpu:settings: {platform: aws\n   - : [\n")
    for name in ("Pulumi.aws-prod.yaml", "aws-prod.regions.yaml", "Pulumi.aws-dev.yaml"):
        shutil.copy(ROOT / "stacks" / name, stacks / name)
    (base / "blocker").write_text("a file, not a folder: nothing can be written under it\n")
    (base / "refused.kubeconfig").write_text(KUBECONFIG.format(port=refused))
    (base / "silent.kubeconfig").write_text(KUBECONFIG.format(port=silent))
    # a signed conformance bundle, one with an empty envelope, one with a malformed one
    from components.conformance import evidence as ev

    key = Ed25519PrivateKey.generate()
    for name in ("bundle", "empty-bundle", "bad-bundle"):
        ev.write(base / name, 35, {}, {"platformName": "ck8s-gpu"}, {"serverVersion": "v1.35.1"})
        ev.sign(base / name, key, {"checklist": "test"})
    (base / "empty-bundle" / ev.ENVELOPE).write_text("")
    (base / "bad-bundle" / ev.ENVELOPE).write_text('{"payload": ')
    (base / "key.pub").write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    (base / "bad.pub").write_text("-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n")
    return World(base, refused, silent)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with socket.socket() as closed, socket.socket() as silent:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)  # never accepted: the kernel completes the handshake, nobody ever answers
        yield _world(tmp_path_factory.mktemp("abuse"), closed.getsockname()[1], silent.getsockname()[1])


S = "stacks"  # --stacks-dir, relative to the world: every stack path printed must be absolute
NO_CREDS = "Unable to locate credentials"
NO_PULUMI = "pulumi: command not found"
STAMP_CHECK = ("stamp", "--template", "aws-prod", "--regions", "us-west-2", "--backup-region", "us-east-2", "--check")
EMPTY = ("Pulumi.empty.yaml", "needs a `config:` mapping")
MALFORMED = ("Pulumi.bad.yaml", "not valid YAML at line 3")


def stack_rows(argv: tuple[str, ...], flag: str, *, path: bool) -> list[Row]:
    """The empty and the malformed stack file, given as `flag` (a name, or a path when `path`)."""
    rows = []
    for abuse, name, says in (("empty stack", "empty", EMPTY), ("malformed stack", "bad", MALFORMED)):
        given = (flag, f"{S}/Pulumi.{name}.yaml") if path else (flag, name, "--stacks-dir", S)
        rows.append(Row(abuse, (*argv, *given), BAD, (f"{{world}}/{S}/{says[0]}", says[1])))
    return rows


ROWS: dict[str, list[Row]] = {
    "plan": [
        *stack_rows(("plan",), "--stack", path=False),
        Row("unwritable --out", ("plan", "--stack", "aws-prod", "--out", "blocker/plan"), BAD,
            ("--out blocker/plan", "{world}/blocker is not a folder")),
        # (read-only folders do not stop root; /proc does)
        Row("--out under /proc", ("plan", "--stack", "aws-prod", "--out", "/proc/ck8s-gpu-abuse"), BAD,
            ("--out /proc/ck8s-gpu-abuse: /proc: cannot write there",)),
        Row("closed stdout", ("plan", "--stack", "kind"), CLOSED, closed_stdout=True),
        # planned offline: no credentials needed, Ctrl-C at any moment is clean
        Row("no credentials, Ctrl-C", ("plan", "--stack", "aws-prod", "--out", "plan-{delay}"), OK,
            sigint=(0.5, 2.0, 3.5), out="plan-{delay}"),
    ],
    "smoke": [
        *stack_rows(("smoke", "--kubeconfig", "refused.kubeconfig"), "--stack", path=True),
        Row("unwritable --report", ("smoke", "--kubeconfig", "refused.kubeconfig", "--report", "blocker/r.json"),
            BAD, ("--report blocker/r.json", "{world}/blocker is not a folder")),
        Row("cluster refuses", ("smoke", "--kubeconfig", "refused.kubeconfig"), BAD, ("cannot reach the cluster",)),
        Row("closed stdout", ("smoke", "--help"), CLOSED, closed_stdout=True),
        Row("Ctrl-C", ("smoke", "--kubeconfig", "silent.kubeconfig"), BAD, sigint=(2.0,)),
    ],
    "stamp": [  # --offline (its planner, its --out) and Ctrl-C of it: test_atomic_writes.py
        *stack_rows(("stamp", "--regions", "us-west-2", "--check"), "--template", path=False),
        # Pulumi reads the project's stacks/ only (--stacks-dir is refused for --preview): nothing may appear there
        Row("no Pulumi CLI, no credentials", ("stamp", "--template", "aws-prod", "--regions", "us-west-2",
                                              "--backup-region", "us-east-2", "--preview", "--preflight"), BAD,
            ("the Pulumi CLI is not installed",), absent=ROOT / "stacks" / "Pulumi.aws-prod-us-west-2.yaml"),
        Row("closed stdout", (*STAMP_CHECK, "--stacks-dir", S), CLOSED, closed_stdout=True),
        Row("Ctrl-C", (*STAMP_CHECK, "--stacks-dir", S), FAILED, sigint=(0.5,)),  # 1: the stack file is new
    ],
    "preflight": [
        *stack_rows(("preflight",), "--stack", path=False),
        Row("no credentials", ("preflight", "--stack", "aws-prod", "--stacks-dir", S), FAILED, (NO_CREDS,)),
        Row("closed stdout", ("preflight", "--stack", "aws-prod", "--stacks-dir", S), CLOSED, closed_stdout=True),
        Row("Ctrl-C", ("preflight", "--stack", "aws-prod", "--stacks-dir", S), FAILED, sigint=(0.5,)),
    ],
    "rebuild-plan": [
        *stack_rows(("rebuild-plan", "--to", "us-west-2"), "--from", path=False),
        Row("unwritable --out", ("rebuild-plan", "--from", "aws-prod", "--to", "us-west-2", "--backup-region",
                                 "us-east-2", "--out", "blocker/dr"), BAD, ("--out blocker/dr", "is not a folder")),
        Row("closed stdout", ("rebuild-plan", "--from", "aws-prod", "--to", "us-west-2", "--backup-region",
                              "us-east-2"), CLOSED, closed_stdout=True),
        Row("no credentials, Ctrl-C", ("rebuild-plan", "--from", "aws-prod", "--to", "us-west-2", "--backup-region",
                                       "us-east-2", "--out", "dr-{delay}"), OK, sigint=(0.5, 2.0, 3.5),
            out="dr-{delay}"),
    ],
    "upgrade": [
        *stack_rows(("upgrade", "--to", "1.35-classic", "--plan"), "--stack", path=False),
        # to the track it is on: no refusal of the pinned snap, straight to `pulumi` (nothing is written before)
        Row("no Pulumi CLI", ("upgrade", "--stack", "aws-dev", "--stacks-dir", S, "--to", "1.34-classic"), FAILED,
            (NO_PULUMI,)),
        Row("closed stdout", ("upgrade", "--stack", "aws-prod", "--to", "1.35-classic", "--plan"), CLOSED,
            closed_stdout=True),
        Row("Ctrl-C", ("upgrade", "--stack", "aws-prod", "--to", "1.35-classic", "--plan"), OK, sigint=(0.5,)),
    ],
    "replace-node": [
        *stack_rows(("replace-node", "--node", "ip-10-0-0-5.ec2.internal"), "--stack", path=False),
        Row("no credentials", ("replace-node", "--stack", "aws-prod", "--node", "ip-10-0-0-5.ec2.internal"),
            FAILED, (f"AWS: {NO_CREDS}",)),
        Row("closed stdout, no credentials", ("replace-node", "--stack", "aws-prod", "--node",
                                              "ip-10-0-0-5.ec2.internal", "--plan"), CLOSED, closed_stdout=True),
        Row("Ctrl-C", ("replace-node", "--stack", "aws-prod", "--node", "ip-10-0-0-5.ec2.internal"), FAILED,
            sigint=(0.5,)),
    ],
    "forget-cluster": [  # reads nothing but the Pulumi state: no stack file, no output option
        Row("no Pulumi CLI", ("forget-cluster", "--stack", "aws-prod"), FAILED, (NO_PULUMI,)),
        Row("closed stdout", ("forget-cluster", "--help"), CLOSED, closed_stdout=True),
        Row("Ctrl-C", ("forget-cluster", "--stack", "aws-prod"), FAILED, sigint=(0.5,)),
    ],
    "report utilization": [
        *stack_rows(("report", "utilization", "--prometheus-url", "http://127.0.0.1:{refused}"), "--stack",
                    path=True),
        Row("unwritable --out", ("report", "utilization", "--prometheus-url", "http://127.0.0.1:{refused}",
                                 "--out", "blocker/u.json"), BAD, ("--out blocker/u.json", "is not a folder")),
        Row("Prometheus refuses", ("report", "utilization", "--prometheus-url", "http://127.0.0.1:{refused}"),
            FAILED),
        Row("closed stdout", ("report", "utilization", "--help"), CLOSED, closed_stdout=True),
        Row("Ctrl-C", ("report", "utilization", "--prometheus-url", "http://127.0.0.1:{silent}"), FAILED,
            sigint=(2.0,)),
    ],
    "conformance run": [
        *stack_rows(("conformance", "run", "--kubeconfig", "refused.kubeconfig"), "--stack", path=True),
        Row("unwritable --out", ("conformance", "run", "--kubeconfig", "refused.kubeconfig", "--out",
                                 "blocker/evidence"), BAD, ("--out blocker/evidence", "is not a folder")),
        Row("cluster refuses", ("conformance", "run", "--kubeconfig", "refused.kubeconfig"), FAILED,
            ("cannot reach the cluster",)),
        Row("closed stdout", ("conformance", "run", "--help"), CLOSED, closed_stdout=True),
        Row("Ctrl-C", ("conformance", "run", "--kubeconfig", "silent.kubeconfig"), FAILED, sigint=(2.0,)),
    ],
    "conformance verify": [  # no stack, no output: its input is the bundle and the key
        Row("empty envelope", ("conformance", "verify", "empty-bundle", "--public-key", "key.pub"), FAILED,
            ("not a DSSE envelope",)),
        Row("malformed envelope", ("conformance", "verify", "bad-bundle", "--public-key", "key.pub"), FAILED,
            ("not a DSSE envelope",)),
        Row("malformed key", ("conformance", "verify", "bundle", "--public-key", "bad.pub"), BAD, ("--public-key",)),
        Row("bundle not a folder", ("conformance", "verify", "blocker", "--public-key", "key.pub"), BAD,
            ("not a directory",)),
        Row("closed stdout", ("conformance", "verify", "bundle", "--public-key", "key.pub"), CLOSED,
            closed_stdout=True),
        Row("Ctrl-C", ("conformance", "verify", "bundle", "--public-key", "key.pub"), OK, sigint=(0.3,)),
    ],
}


def _fill(text: str, world: World, delay: float | None) -> str:
    return text.format(world=world.dir, refused=world.refused, silent=world.silent, delay=delay)


def run(world: World, row: Row, delay: float | None) -> Run:
    argv = [_fill(a, world, delay) for a in row.argv]
    stdout: int = subprocess.PIPE
    if row.closed_stdout:  # like `| head -0`: the reader is gone before the first line
        read_end, stdout = os.pipe()
        os.close(read_end)
    existed = row.absent is not None and row.absent.exists()
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "components", *argv], cwd=world.dir, env=world.env(),
                            stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group, as a terminal's job
    if row.closed_stdout:
        os.close(stdout)
    hung = False
    try:
        try:  # reading all along: a run that fills a pipe never blocks on it
            out, err = proc.communicate(timeout=delay if delay is not None else TIMEOUT)
        except subprocess.TimeoutExpired:
            if delay is None:
                raise
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole group
            out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    folder = world.dir / _fill(row.out, world, delay) if row.out else None
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder and folder.exists() else []
    wrote = False
    if row.absent is not None and not existed and row.absent.exists():
        wrote = True
        row.absent.unlink()  # the checkout stays as it was
    return Run(row, delay, proc.returncode, out or "", err, time.monotonic() - start, hung, files, wrote)


def problems(run: Run, world: World) -> list[str]:
    """What is wrong with one run; [] when it ended as `ck8s-gpu --help` says."""
    row, err = run.row, run.stderr
    where = f"{row.abuse}{f' at {run.delay}s' if run.delay is not None else ''}"
    if run.hung:
        return [f"{where}: still running after {TIMEOUT}s"]
    bad = []
    if "Traceback" in err or "Exception ignored" in err:
        bad.append("a traceback")
    messages = [line for line in err.splitlines() if line.strip() and not line[0].isspace()]
    if row.sigint and run.code == INTERRUPTED:
        if messages != ["ck8s-gpu: interrupted"]:
            bad.append(f"not one line naming the interruption: {messages}")
        if half := [f for f in run.files if Path(f).name.startswith(".")]:
            bad.append(f"half-written files left: {half}")
    elif run.code != row.code:
        bad.append(f"exit {run.code}, documented {row.code}" + (" or 130" if row.sigint else ""))
    elif row.code == CLOSED:
        if messages:
            bad.append(f"a closed stdout is not an error to report: {messages}")
    elif row.code != OK and not row.sigint:
        says = [_fill(s, world, None) for s in row.says]
        if len(messages) > 1 or (messages and not messages[0].startswith("ck8s-gpu")):
            bad.append(f"not one message: {messages}")
        # preflight reports a check it could not make in its report, on stdout: that is its message
        if not messages and not (says and all(s in run.stdout for s in says)):
            bad.append("no message")
        bad += [f"does not say {s!r}" for s in says if s not in err + run.stdout]
    if run.wrote_absent:
        bad.append(f"wrote {row.absent} before failing")
    if run.code not in (OK, FAILED, BAD, INTERRUPTED, CLOSED):
        bad.append(f"exit {run.code} is not in `ck8s-gpu --help`")
    return [f"{where}: {b}\n    argv: {' '.join(row.argv)}\n    stderr: {err.strip()[-1500:]}" for b in bad]


def test_every_subcommand_is_in_the_table() -> None:
    parser = cli.build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    leaves = set()
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        nested = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
        leaves |= {f"{name} {leaf}" for a in nested for leaf in a.choices} if nested else {name}
    assert leaves == set(ROWS)


@pytest.mark.parametrize("command", list(ROWS))
def test_whatever_the_environment_does_ends_in_one_message_and_a_documented_code(command: str,
                                                                                  world: World) -> None:
    jobs = [(row, delay) for row in ROWS[command] for delay in (row.sigint or (None,))]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        runs = list(pool.map(lambda job: run(world, *job), jobs))
    found = [p for r in runs for p in problems(r, world)]
    assert not found, "\n".join(found)

