"""Entry point the ck8s-gpu language host runs: configure the Pulumi runtime, run the program.

Invoked as `python -u -c <this file's text> [flags] PROGRAM [ARGS...]` by main.go.
"""

import argparse
import asyncio
import logging
import os
import runpy
import sys
import traceback

# Exit code meaning "an actionable error was already shown": the engine then just stops.
BAIL = 32


def main() -> int:
    p = argparse.ArgumentParser(prog="ck8s-gpu-python-runner")
    for flag in ("monitor", "engine", "project", "stack", "organization", "root-directory",
                 "pwd", "parallel"):
        p.add_argument(f"--{flag}")
    p.add_argument("--dry-run", default="false")
    p.add_argument("program")
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    try:
        import pulumi
        import pulumi.runtime
        from pulumi.runtime.stack import run_in_stack
    except ImportError:
        traceback.print_exc()
        print("The pulumi Python SDK is not importable by this interpreter "
              f"({sys.executable}); install the project's dependencies.", file=sys.stderr)
        return BAIL

    pulumi.runtime.set_all_config(pulumi.runtime.get_config_env(),
                                  pulumi.runtime.get_config_secret_keys_env())
    settings = pulumi.runtime.Settings(
        project=a.project, stack=a.stack, monitor=a.monitor, engine=a.engine,
        parallel=int(a.parallel or 0) or None, dry_run=a.dry_run == "true",
        organization=a.organization or None, root_directory=a.root_directory or None,
    )
    pulumi.runtime.configure(settings)
    program = os.path.abspath(a.program)
    sys.argv = [program, *a.args]
    if a.pwd:
        os.chdir(a.pwd)
    if os.path.isdir(program) and program not in sys.path:
        sys.path.insert(0, program)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    # As Pulumi's own host does (sdk/python/cmd/pulumi-language-python-exec): after a failed
    # resource, part of the program's graph never resolves, and asyncio would log every pending
    # RPC task it collects at exit ("Task was destroyed but it is pending!").
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    try:
        loop.run_until_complete(run_in_stack(lambda: runpy.run_path(program, run_name="__main__")))
    except pulumi.RunError as e:
        pulumi.log.error(str(e))  # as upstream: through the engine, so the program can shape it
        return BAIL
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        loop.close()
    return 0


sys.exit(main())
