"""Entry point of every fake command: `python -m tests.fakes.k8s_snap.main <tool> <args...>`.

The shims on a simulated node's PATH (written by tests/fakes/k8s_snap/fleet.py and by the fake
`snap install`) carry FAKE_WORLD, FAKE_INSTANCE and FAKE_REGION, so a command always acts as the
instance it runs on, also when SSM runs it on another instance.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.k8s_snap import network, snapd, tracks, world


def shim(path: Path, tool: str, instance: str, world_dir: str, region: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parents[3]
    # With the fork server running (forkserver.py), the call goes to it through the client.
    server = os.environ.get("FAKE_FORKSERVER")
    run = (f"FAKE_FORKSERVER='{server}' exec '{sys.executable}' -S '{repo}/tests/fakes/k8s_snap/client.py'"
           if server else f"exec '{sys.executable}' -m tests.fakes.k8s_snap.main")
    path.write_text(
        "#!/bin/sh\n"
        f"FAKE_WORLD='{world_dir}' FAKE_INSTANCE='{instance}' FAKE_REGION='{region}' "
        f"PYTHONPATH='{repo}' {run} {tool} \"$@\"\n"
    )
    path.chmod(0o755)


def snap(argv: Sequence[str]) -> int:
    """snapd's CLI for the calls the node script makes (`snap wait`, `install`, `refresh --hold`,
    and from image media `ack` and `install FILE`: snapd.py) and the upgrade's `snap refresh k8s
    --channel=<track>/stable`. The store is behind the world's network (network.py)."""
    me_id = os.environ["FAKE_INSTANCE"]
    if argv[:1] == ["refresh"] and "--hold" not in argv:
        return refresh(me_id, list(argv[1:]))
    with world.locked() as state:
        me: dict[str, Any] = state["instances"][me_id]
        world.record(state, me_id, "snap " + " ".join(argv))
        if list(argv[:3]) == ["wait", "system", "seed.loaded"]:
            return 0
        if argv[:1] == ["ack"] and len(argv) == 2:
            try:
                snapd.ack(me["node"], argv[1])
            except snapd.SnapError as exc:
                return snapd.error(exc)
            return 0
        if argv[:1] == ["install"] and len(argv) >= 2 and snapd.is_local(argv[1]):
            # A change snapd is already running on that snap (first boot's auto-refresh, seeding):
            # overlord/snapstate/conflict.go ChangeConflictError, `snap %q has %q change in progress`.
            conflicts = state.setdefault("snap_conflicts", {})
            if conflicts.get(me_id, 0) > 0:
                conflicts[me_id] -= 1
                name = Path(argv[1]).name.split("_", 1)[0]
                print(f'error: snap "{name}" has "auto-refresh" change in progress', file=sys.stderr)
                return 1
            extra = [a for a in argv[2:] if a != "--classic"]
            if extra:
                print(f"error: the fake snap does not model `snap install FILE {' '.join(extra)}`", file=sys.stderr)
                return 1
            try:
                snap_file = snapd.install_file(state, me_id, argv[1], "--classic" in argv[2:])
            except snapd.SnapError as exc:
                return snapd.error(exc)
            name = snap_file["name"]
            if name == "k8s":
                me["node"].setdefault("snap_release", {})["k8s"] = {
                    "revision": snap_file["revision"], "version": snap_file["version"]}
                _k8s_shims(me, me_id)
                # The fake's k8s CLI follows the track of the Kubernetes version the file carries.
                me["node"].setdefault("snap", {})["k8s"] = f"1.{tracks.minor_of(snap_file['version'])}-classic/stable"
            else:
                me["node"].setdefault("snap", {})[name] = "-"
            return 0
        if argv[:1] == ["install"] and len(argv) >= 2:
            name = argv[1]
            opts = {a.split("=", 1)[0]: a.split("=", 1)[1] if "=" in a else True for a in argv[2:]}
            if not network.attempt(state, me_id, "snapd", network.SNAP_STORE, f"install {name}"):
                print(f'error: cannot install "{name}": Post "https://{network.SNAP_STORE}/v2/snaps/refresh": '
                      f"{network.dial_timeout(network.SNAP_STORE)}", file=sys.stderr)
                return 1
            failures = state.setdefault("snap_failures", {})
            if failures.get(me_id, 0) > 0:
                failures[me_id] -= 1
                print(f'error: cannot install "{name}": Post "https://api.snapcraft.io/v2/snaps/refresh": EOF',
                      file=sys.stderr)
                return 1
            channel = str(opts.get("--channel", "latest/stable"))
            if name == "k8s":
                if opts.get("--classic") is not True:
                    print('error: This revision of snap "k8s" was published using classic confinement', file=sys.stderr)
                    return 1
                arch = str(me.get("arch", "amd64"))
                try:
                    release = tracks.channel_head(state, channel, arch)
                except KeyError:
                    print(f'error: requested a non-existing branch on {channel} for snap "k8s"', file=sys.stderr)
                    return 1
                if "--revision" in opts:
                    # cmd/snapd/cli/error.go ErrorKindSnapRevisionNotAvailable ("note --revision
                    # overrides --channel"): the channel given with it is only what the snap tracks.
                    found = tracks.find_revision(state, str(opts["--revision"]), arch)
                    if found is None:
                        print(f'error: snap "k8s" revision {opts["--revision"]} not available (see \'snap info k8s\')',
                              file=sys.stderr)
                        return 1
                    release = found[1]
                me["node"].setdefault("snap_release", {})["k8s"] = release
                _k8s_shims(me, me_id)
            me["node"].setdefault("snap", {})[name] = channel
            return 0
        if list(argv) == ["list", "k8s"]:
            # cmd/snapd/cli/cmd_list.go: a header, then Name Version Rev Tracking Publisher Notes
            # (the publisher's badge `**` without a UTF-8 terminal, as `snap refresh` prints it;
            # notes.go: `classic` before `held`).
            if "k8s" not in me["node"].get("snap", {}):
                print("error: no matching snaps installed", file=sys.stderr)
                return 1
            track = tracks.installed(me["node"])
            notes = "classic,held" if me["node"].get("held") else "classic"
            print("Name  Version  Rev  Tracking  Publisher  Notes")
            # A snap installed from a file tracks no channel: `-` (cmd_list.go).
            tracking = "-" if me["node"].get("snap_local", {}).get("k8s") else me["node"]["snap"]["k8s"]
            print(f"k8s  {track.kubernetes_version}  {track.revision}  {tracking}  canonical**  {notes}")
            return 0
        if argv[:1] == ["list"] and len(argv) == 2:
            return snapd.list_snap(me["node"], argv[1])
        if list(argv) == ["refresh", "--hold", "k8s"]:
            if "k8s" not in me["node"].get("snap", {}):
                print('error: snap "k8s" is not installed', file=sys.stderr)
                return 1
            me["node"]["held"] = True
            return 0
    print(f"error: the fake snap does not model `snap {' '.join(argv)}`", file=sys.stderr)
    return 1


def _k8s_shims(me: dict[str, Any], me_id: str) -> None:
    root = Path(me["root"])
    here = (os.environ["FAKE_WORLD"], os.environ["FAKE_REGION"])
    shim(root / "snap/bin/k8s", "k8s", me_id, *here)
    shim(root / "snap/k8s/current/bin/kubectl", "kubectl", me_id, *here)


def curl(argv: Sequence[str]) -> int:
    """The real curl, behind the world's network: a URL on the internet is recorded and, with the
    network cut, times out as curl does (exit 28, CURLE_OPERATION_TIMEDOUT; lib/multi.c
    "Connection timed out after %ld milliseconds")."""
    url = next((a for a in argv if a.startswith(("https://", "http://"))), None)
    if url is not None:
        parts = urlsplit(url)
        host = parts.hostname or ""
        with world.locked() as state:
            reachable = network.attempt(state, os.environ["FAKE_INSTANCE"], "curl", host, url)
        if not reachable:
            print("curl: (28) Connection timed out after 30001 milliseconds", file=sys.stderr)
            return 28
    real = shutil.which("curl", path="/usr/bin:/bin:/usr/local/bin")
    if real is None:
        print("fake: no real curl on this machine", file=sys.stderr)
        return 127
    os.execv(real, ["curl", *argv])
    return 127


def _refresh_args(args: list[str]) -> tuple[list[str], str | None, str | None]:
    """cmd/snapd/cli/cmd_snap_op.go cmdRefresh (go-flags: flags anywhere, `--channel X` or `=X`,
    `--revision=N`)."""
    names: list[str] = []
    channel: str | None = None
    revision: str | None = None
    risks = {"--stable": "stable", "--candidate": "candidate", "--beta": "beta", "--edge": "edge"}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--channel" and i + 1 < len(args):
            channel, i = args[i + 1], i + 2
            continue
        if a.startswith("--channel="):
            channel = a.split("=", 1)[1]
        elif a.startswith("--revision="):
            revision = a.split("=", 1)[1]
        elif a in risks:
            if channel is not None:
                raise ValueError("Please specify a single channel")
            channel = risks[a]
        elif a.startswith("-"):
            raise ValueError(f"unknown flag `{a.lstrip('-').split('=')[0]}'")
        else:
            names.append(a)
        i += 1
    return names, channel, revision


def refresh(me_id: str, args: list[str]) -> int:
    """`snap refresh <snap> [--channel=<track>/<risk>]` of the k8s snap.

    snapd (canonical/snapd@bee548f7): a refresh that names the snap proceeds although the snap is
    held (`snap refresh --hold k8s` holds auto-refreshes and general refreshes only:
    snapcore/snapd#12035, "doesn't apply to specific refreshes (snap refresh foo bar)"); the same
    channel with no newer revision -> `snap "k8s" has no updates available` on stderr, exit 0
    (cmd/snapd/cli/error.go ErrorKindSnapNoUpdateAvailable is not an error); done -> stdout
    `<name> (<channel>) <version> from <publisher> refreshed` (cmd_snap_op.go showDoneSnap; the
    channel shown unless it is plain `stable`); the publisher's verified badge is `✓` on a UTF-8
    terminal and `**` otherwise (color.go canUnicode: no TTY -> no Unicode; SSM and subprocess
    runs have no TTY), so the fake prints `Canonical**`; a second refresh while one runs ->
    `error: snap "k8s" has "refresh-snap" change in progress` (overlord/snapstate/conflict.go).
    A channel on a track the fake store lacks is refused as `snap install` refuses it.

    While it runs, every k8s service of the node is down (the snap's services restart on refresh):
    for a control plane that is its etcd member and kube-apiserver (invariants.py), for
    `state["refresh_seconds"]` (slept outside the lock). Then the node's kubelet (and apiserver) run
    the new track's Kubernetes, and k8sd's post-refresh hook runs (k8sd.post_refresh)."""
    try:
        names, channel, revision = _refresh_args(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if len(names) != 1:
        print("error: the fake snap refreshes one named snap only", file=sys.stderr)
        return 1
    name = names[0]
    from tests.fakes.k8s_snap import invariants, k8sd, workloads

    with world.locked() as state:
        me: dict[str, Any] = state["instances"][me_id]
        world.record(state, me_id, "snap refresh " + " ".join(args))
        installed = me["node"].get("snap", {}).get(name)
        if installed is None:
            print(f'error: snap "{name}" is not installed', file=sys.stderr)
            return 1
        if me["node"].get("refreshing"):
            print(f'error: snap "{name}" has "refresh-snap" change in progress', file=sys.stderr)
            return 1
        if channel is None:
            target = installed
        elif "/" in channel:
            target = channel
        elif channel in ("stable", "candidate", "beta", "edge"):  # a risk on the tracked track
            target = f"{installed.split('/')[0]}/{channel}"
        else:  # a track: its stable risk
            target = f"{channel}/stable"
        arch = str(me.get("arch", "amd64"))
        try:
            release = tracks.channel_head(state, target, arch)
        except KeyError:
            print(f'error: requested a non-existing branch on {target} for snap "{name}"', file=sys.stderr)
            return 1
        if revision is not None:  # cmd_snap_op.go "Refresh to the given revision" (error.go as install)
            found = tracks.find_revision(state, revision, arch)
            if found is None:
                print(f'error: snap "{name}" revision {revision} not available (see \'snap info {name}\')',
                      file=sys.stderr)
                return 1
            release = found[1]
        old = tracks.installed(me["node"])
        new = replace(tracks.from_channel(target), kubernetes_version=release["version"],
                      revision=release["revision"])
        if target == installed and release["revision"] == old.revision:
            print(f'snap "{name}" has no updates available', file=sys.stderr)
            return 0
        node_name = me["node"].get("name")
        member = state.get("cluster") is not None and node_name in state["cluster"]["members"]
        me["node"]["refreshing"] = True
        if member:
            invariants.version_change(state, node_name, old, new)
            invariants.check(state, f"refresh of {node_name} to {target} started")
        seconds = float(state.get("refresh_seconds", 0))
    time.sleep(seconds)
    with world.locked() as state:
        me = state["instances"][me_id]
        me["node"]["snap"][name] = target
        me["node"].setdefault("snap_release", {})[name] = release
        me["node"]["refreshing"] = False
        cluster = state.get("cluster")
        if member and cluster is not None and node_name in cluster["members"]:
            node = cluster["nodes"].get(node_name)
            if node is not None:
                node.update(version=new.kubernetes_version, revision=new.revision)
            if cluster["members"][node_name]["role"] == "control-plane":
                k8sd.post_refresh(state, node_name, new)
            else:
                k8sd.reconcile_upgrades(state)
            workloads.schedule_pending(state)
            invariants.check(state, f"refresh of {node_name} to {target} done")
    shown = "" if target == "stable" else f" ({target})"
    print(f"{name}{shown} {new.kubernetes_version} from Canonical** refreshed")
    return 0


def cloud_init(argv: Sequence[str]) -> int:
    """`cloud-init query ds.meta_data.<key>` on the EC2 datasource (IMDS meta-data key names)."""
    state = world.read()
    me = state["instances"][os.environ["FAKE_INSTANCE"]]
    values = {"ds.meta_data.local-hostname": me["name"], "ds.meta_data.local-ipv4": me["ip"],
              "ds.meta_data.instance-id": os.environ["FAKE_INSTANCE"]}
    if len(argv) != 2 or argv[0] != "query" or argv[1] not in values:
        print(f"ERROR: Undefined jinja variable: \"{argv[-1] if argv else ''}\"", file=sys.stderr)
        return 1
    print(values[argv[1]])
    return 0


def main(argv: Sequence[str]) -> int:
    tool, *rest = argv
    # Imported per tool: every fake call is a new process, and most need little.
    if tool == "k8s":
        from tests.fakes.k8s_snap import k8s_cli

        return k8s_cli.main(rest)
    if tool == "kubectl":
        from tests.fakes.k8s_snap import kubectl_cli

        return kubectl_cli.main(rest)
    if tool == "aws":
        from tests.fakes.k8s_snap import aws_cli

        return aws_cli.main(rest)
    if tool == "snap":
        return snap(rest)
    if tool == "cloud-init":
        return cloud_init(rest)
    if tool == "curl":
        return curl(rest)
    if tool == "systemctl":
        from tests.fakes.k8s_snap import systemctl

        return systemctl.main(rest)
    print(f"fake: unknown tool {tool}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
