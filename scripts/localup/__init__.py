"""`make up` / `make down`: the `local-kubelet` stack on this machine (docs/local-cluster.md).

preflight (what this machine must be), procs (processes, pid files, ports), state (the state dir's
layout), usage (what `up` prints), up (needs the project's venv), down (standard library only, so it
works with the venv gone).
"""
