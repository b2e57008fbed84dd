"""Load a stack file and run the project's real `__main__.py` under the mock engine."""

from __future__ import annotations

import asyncio
import runpy
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from ..runtime.checkout_alias import alias_checkout_name
from ..settings.load import KUBECONFIG_KEY, SettingsError, read_stack_file
from ..settings.model import Settings
from ..tables.paths import PROJECT_DIR as PROJECT_DIR  # re-exported: tests and scripts locate the program here
from ..validate import from_config as settings_from_config
from .mockengine import PlanRun, Recorded, run_program
from .names import recorded_problems

SECRET_PLACEHOLDER = "[secret config: not decrypted by the offline plan]"
# Parsable on purpose: components may read the server address; nothing ever connects to it.
PLACEHOLDER_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: offline-plan, cluster: {server: "https://offline-plan.invalid:6443"}}]
users: [{name: offline-plan, user: {token: offline-plan}}]
contexts: [{name: offline-plan, context: {cluster: offline-plan, user: offline-plan}}]
current-context: offline-plan
"""


@dataclass
class Plan:
    stack: str
    settings: Settings
    resources: list[Recorded]
    outputs: dict[str, Any]


def stack_file(name: str, stacks_dir: Path | None = None) -> Path:
    """The stack's file, absolute: `stacks_dir` (a command's --stacks-dir) is taken from the working
    directory, the default from the checkout, and every message then names the file really read."""
    return ((stacks_dir or PROJECT_DIR / "stacks") / f"Pulumi.{name}.yaml").absolute()


def offline_config(config: dict[str, Any], settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """Replace encrypted values by placeholders; supply a placeholder kubeconfig where one is needed."""
    out: dict[str, Any] = {}
    secret_keys: list[str] = []
    for key, value in config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            value = PLACEHOLDER_KUBECONFIG if key == KUBECONFIG_KEY else SECRET_PLACEHOLDER
            secret_keys.append(key)
        out[key] = value
    # Needed to deploy, not to plan: the local stack's is set by the test that starts the
    # cluster, an existing stack's by `pulumi config set --secret` on the operator's machine.
    if settings.traits.needs_kubeconfig and KUBECONFIG_KEY not in out:
        out[KUBECONFIG_KEY] = PLACEHOLDER_KUBECONFIG
        secret_keys.append(KUBECONFIG_KEY)
    return out, secret_keys


def interruptible(program: Callable[[], Any]) -> Callable[[], Any]:
    """`program`, made to end at once on Ctrl-C under the mock engine.

    The SDK runs the program in `run_pulumi_func` (pulumi/runtime/stack.py, the pin in pyproject.toml),
    which catches every BaseException the program raises, KeyboardInterrupt included, and keeps it
    while it `await wait_for_rpcs()`, re-raising it only afterwards. Interrupted, the program leaves
    that wait half-done work: a resource stopped between making its outputs and registering it
    leaves outputs nobody resolves (the wait never ends: `plan` and `rebuild-plan` hung), and a lazy
    SDK module stopped while it imports stays half-initialised in sys.modules (importlib.util's
    LazyLoader marks it loaded first), so the registrations still queued fail on it, e.g.
    "AttributeError: module 'pulumi_kubernetes.core.v1' has no attribute 'Namespace'": wait_for_rpcs
    raises that instead, and the interrupt was lost in a traceback. So on KeyboardInterrupt the run's
    pending RPCs and outputs are dropped first, as the SDK's own `pulumi.runtime.test` decorator
    drops them (pulumi/runtime/mocks.py): the wait finds nothing, and the interrupt propagates.

    One place in the SDK swallows a Ctrl-C outright: the source position of each frame of each
    registration (pulumi/runtime/resource.py `_get_source_position_for_frame`: `except
    BaseException: return None` around `Path.as_uri()`). So a Ctrl-C that came is also noted, and
    a program that ends as if none had is interrupted then."""

    def run() -> Any:
        came: list[int] = []
        # Only where a Python handler raises (Python's own, or the CLI's that notes it too): a
        # planning worker ignores SIGINT (stamping/offline.py).
        previous = signal.getsignal(signal.SIGINT)
        handler = previous if callable(previous) else None
        ours = threading.current_thread() is threading.main_thread() and handler is not None

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            came.append(signum)
            if handler is not None:
                handler(signum, frame)  # raises KeyboardInterrupt
            raise KeyboardInterrupt  # a handler that did not

        if ours:
            signal.signal(signal.SIGINT, on_sigint)
        try:
            result = program()
            if came:
                raise KeyboardInterrupt
            return result
        except KeyboardInterrupt:
            from pulumi.runtime import settings as pulumi_settings

            pulumi_settings.SETTINGS.rpc_manager.clear()
            pulumi_settings.SETTINGS.outputs.clear()
            raise
        finally:
            if handler is not None and ours:
                signal.signal(signal.SIGINT, handler)

    return run


class _ThreadLoops:
    """The threads a run's RPCs go to (the SDK sends each to the loop's default executor,
    pulumi/runtime/resource.py), with event loops made and closed here: the SDK's mock monitor
    makes one in each thread it runs in (pulumi/runtime/mocks.py RegisterResource ->
    _ensure_event_loop) and never closes it. See close_run_loop for what an unclosed loop did."""

    def __init__(self) -> None:
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.executor = ThreadPoolExecutor(thread_name_prefix="ck8s-gpu-plan", initializer=self._loop)

    def _loop(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self.loops.append(loop)  # list.append is atomic: the threads may start together

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)  # quick: mock calls, none queued any more
        for loop in self.loops:
            loop.close()


def close_run_loop() -> None:
    """Close the event loop run_program made current for its run (its result is plain data by now).

    Left open, the garbage collector closes it at interpreter exit, in no set order with its own
    self-pipe socket: when the socket went first, BaseEventLoop.__del__ printed "Exception ignored
    ... ValueError: Invalid file descriptor: -1" after a finished plan. With no
    current loop, the next run_program or _sync_await makes a fresh one (pulumi/runtime/sync_await.py)."""
    policy = asyncio.get_event_loop_policy()
    try:
        loop = policy.get_event_loop()
    except RuntimeError:  # none current
        return
    if not loop.is_running():
        loop.close()
        policy.set_event_loop(None)


def plan_config(config: dict[str, Any], stack: str, source: str) -> Plan:
    """Validate first (nothing registered on bad input), run the program, then check its AWS names."""
    settings = settings_from_config(config, source, offline=True)
    wire, secret_keys = offline_config(config, settings)
    alias_checkout_name()  # the program's `components` imports are this package's own modules
    threads = _ThreadLoops()

    def program() -> Any:
        asyncio.get_event_loop().set_default_executor(threads.executor)  # the run's loop: its RPCs' threads
        return runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__")

    try:
        run: PlanRun = run_program(
            interruptible(program),
            wire,
            stack=stack,
            region=settings.region or "",
            secret_keys=secret_keys,
            root_directory=PROJECT_DIR,
        )
    finally:
        threads.close()
    # Only a run that ended: a failed one's loop holds the tasks it abandoned, and closing it would
    # report each ("Task was destroyed but it is pending!"); the next run_program replaces it.
    close_run_loop()
    # The mock engine never runs pulumi-aws's Check: apply its naming and AWS's rules to what was registered.
    problems = recorded_problems(run.resources)
    if problems:
        raise SettingsError(source, problems)
    return Plan(stack=stack, settings=settings, resources=run.resources, outputs=run.outputs)


def plan_stack(name: str, stacks_dir: Path | None = None) -> Plan:
    path = stack_file(name, stacks_dir)
    return plan_config(read_stack_file(path), name, str(path))
