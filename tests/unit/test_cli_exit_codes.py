"""The CLI's boundary (components/cli/main.py): what the environment does to a command ends in one
line on stderr and an exit code of `ck8s-gpu --help`'s table, never a traceback, for every
subcommand: Ctrl-C, a reader that closes stdout, a path that cannot be written, no AWS credentials,
AWS refusing a call."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from components.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
# (run_cli drops every AWS_* variable of the caller first)
NO_AWS = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent",
          "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}


def subcommands() -> list[str]:
    parser = cli.build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    return sorted(sub.choices)  # type: ignore[arg-type]


def run_cli(*args: str, env: dict[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run([sys.executable, "-m", "components", *args], cwd=ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=300, **kw)


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_the_help_lists_every_exit_code() -> None:
    text = cli.build_parser().format_help()
    for code in (cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_BAD_INPUT, cli.EXIT_INTERRUPTED, cli.EXIT_CLOSED_OUTPUT):
        assert f"\n  {code} " in text, text


@pytest.mark.parametrize("command", subcommands())
@pytest.mark.parametrize(("raised", "code", "says"), [
    (KeyboardInterrupt(), cli.EXIT_INTERRUPTED, "interrupted"),
    (NoCredentialsError(), cli.EXIT_FAILED, "AWS: Unable to locate credentials: set AWS_PROFILE"),
    (ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "not allowed"}}, "DescribeInstances"),
     cli.EXIT_FAILED, "AWS refused DescribeInstances: UnauthorizedOperation: not allowed"),
    (EndpointConnectionError(endpoint_url="https://ec2.eu-west-1.amazonaws.com"), cli.EXIT_FAILED,
     "AWS: Could not connect to the endpoint URL"),
    (PermissionError(13, "Permission denied", "/srv/out/plan.txt"), cli.EXIT_FAILED,
     "/srv/out/plan.txt: Permission denied"),
])
def test_whatever_a_subcommand_meets_is_one_line_and_a_documented_code(
        command: str, raised: BaseException, code: int, says: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    target = sub.choices[command]  # type: ignore[index]
    argv = [command]
    # a command of commands (`report utilization`): down to its first leaf
    while nested := [a for a in target._actions if isinstance(a, argparse._SubParsersAction)]:
        name, target = next(iter(nested[0].choices.items()))
        argv.append(name)

    def fail(_args: Any) -> int:
        raise raised

    target.set_defaults(func=fail)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    # the smallest argv each subcommand's parser accepts: its required options with dummy values
    for action in target._actions:
        if action.required and action.option_strings:
            argv += [action.option_strings[0], "x"]
    assert cli.main(argv) == code
    line = one_line(capsys.readouterr().err)
    assert says in line, line


def test_a_reader_that_closes_stdout_ends_the_command_quietly() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "components", "plan", "--stack", "aws-prod"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -0`: the reader is gone before the first line
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == cli.EXIT_CLOSED_OUTPUT, err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_an_output_folder_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    run = run_cli("plan", "--stack", "aws-dev", "--out", str(blocker / "plan"))
    assert run.returncode == cli.EXIT_BAD_INPUT  # refused before planning (test_cli_abuse.py: every command)
    assert str(blocker) in one_line(run.stderr)


def test_no_aws_credentials_for_a_command_that_asks_aws() -> None:
    # (preflight reports it as a finding of its own; replace-node used to end in a traceback)
    node = ("--node", "ip-10-20-0-5.eu-west-1.compute.internal")
    run = run_cli("replace-node", "--stack", "aws-dev", *node, env=NO_AWS)
    assert run.returncode == cli.EXIT_FAILED, run.stderr
    assert "AWS: Unable to locate credentials" in one_line(run.stderr)
    # its --plan says what it can without AWS (issue 46): both procedures, no error
    run = run_cli("replace-node", "--stack", "aws-dev", *node, "--plan", env=NO_AWS)
    assert run.returncode == 0 and run.stdout.startswith("offline: no AWS credentials"), run.stderr


def _interrupted_mid_resource() -> None:
    """A program stopped by Ctrl-C between making a resource's outputs and registering it: an
    output that nothing will ever resolve is left for the SDK to wait on."""
    import asyncio

    import pulumi

    loop = asyncio.get_event_loop()
    known: asyncio.Future[bool] = loop.create_future()
    known.set_result(True)
    pulumi.Output(set(), loop.create_future(), known)
    raise KeyboardInterrupt


def test_a_program_interrupted_mid_resource_ends_its_run_at_once() -> None:
    """Ctrl-C in `plan`'s root cause, in process and without timing (test_cli_abuse.py sends real
    ones): the SDK's run_pulumi_func keeps the program's KeyboardInterrupt while it waits for every
    output (pulumi/runtime/stack.py); unwrapped, this run waits for ever (components/plan/run.py
    interruptible)."""
    import asyncio
    import threading

    from components.plan.mockengine import run_program
    from components.plan.run import interruptible

    raised: list[BaseException] = []

    def plan() -> None:
        try:
            run_program(interruptible(_interrupted_mid_resource), {}, stack="interrupted")
        except BaseException as exc:  # the one under test, kept for the main thread
            raised.append(exc)
        # the run's loop, in this thread: what the run abandoned is cancelled, as asyncio.run does
        loop = asyncio.get_event_loop()
        abandoned = asyncio.all_tasks(loop)
        for task in abandoned:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*abandoned, return_exceptions=True))
        loop.close()

    thread = threading.Thread(target=plan, daemon=True)  # a run that hangs is left behind, not waited for
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the interrupted run still waits for its outputs"
    assert [type(e) for e in raised] == [KeyboardInterrupt]
