"""A fake `systemctl` for the verbs the node script calls: `poweroff`, and for the mirror
credentials' timer `daemon-reload` and `enable --now <unit>`.

`enable --now` (systemctl(1): "--now: When used with enable, the units will also be started")
needs the unit file in /etc/systemd/system, else systemd answers "Failed to enable unit: Unit file
<unit> does not exist." (src/systemctl/systemctl-enable.c via install.c, exit 1); the fake records
the unit as enabled and active, it does not run timers (a test fires one by running its service).

systemd's systemctl(1): `poweroff` "Shut down and power-off the system. This is mostly equivalent
to systemctl start poweroff.target --job-mode=replace-irreversibly --no-block": it queues the
shutdown and returns 0, so the caller goes on (and exits) while the system goes down. Here the
power-off is the instance's: EC2 ends it as its shutdown behaviour says and its group's health
check sees it (aws_cli.instance_initiated_shutdown). Any other verb or option is refused: a verb
systemctl does not know as systemctl refuses it (src/systemctl/systemctl.c, "Unknown command verb
'%s'.", exit 1), a real one this fake does not model with its own message, never a silent success.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.fakes.k8s_snap import aws_cli, world

# Verbs systemctl has (systemctl(1) "Commands") that the node script does not call.
KNOWN_VERBS = {"start", "stop", "restart", "reload", "status", "show", "enable", "disable", "is-active",
               "is-enabled", "daemon-reload", "reboot", "halt", "kexec", "suspend", "hibernate", "list-units"}
UNIT_DIR = "etc/systemd/system"


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["poweroff"]:
        with world.locked() as state:
            world.record(state, os.environ["FAKE_INSTANCE"], "systemctl poweroff")
            aws_cli.instance_initiated_shutdown(state, os.environ["FAKE_INSTANCE"])
        return 0
    if list(argv) == ["daemon-reload"]:
        with world.locked() as state:
            world.record(state, os.environ["FAKE_INSTANCE"], "systemctl daemon-reload")
        return 0
    if len(argv) == 3 and argv[:2] == ["enable", "--now"]:
        unit = argv[2]
        with world.locked() as state:
            me = state["instances"][os.environ["FAKE_INSTANCE"]]
            world.record(state, os.environ["FAKE_INSTANCE"], f"systemctl enable --now {unit}")
            if not (Path(me["root"]) / UNIT_DIR / unit).is_file():
                print(f"Failed to enable unit: Unit file {unit} does not exist.", file=sys.stderr)
                return 1
            me["node"].setdefault("units", {})[unit] = "enabled,active"
        return 0
    verb = next((a for a in argv if not a.startswith("-")), "")
    if verb and verb not in KNOWN_VERBS and verb != "poweroff":
        print(f"Unknown command verb '{verb}'.", file=sys.stderr)
        return 1
    print(f"fake systemctl: {' '.join(argv)!r} is not modelled (only poweroff, daemon-reload, enable --now)",
          file=sys.stderr)
    return 1
