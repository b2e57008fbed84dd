"""A fake `systemctl` for the one verb the node script calls: `systemctl poweroff`.

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

from tests.fakes.k8s_snap import aws_cli, world

# Verbs systemctl has (systemctl(1) "Commands") that the node script does not call.
KNOWN_VERBS = {"start", "stop", "restart", "reload", "status", "show", "enable", "disable", "is-active",
               "is-enabled", "daemon-reload", "reboot", "halt", "kexec", "suspend", "hibernate", "list-units"}


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["poweroff"]:
        with world.locked() as state:
            world.record(state, os.environ["FAKE_INSTANCE"], "systemctl poweroff")
            aws_cli.instance_initiated_shutdown(state, os.environ["FAKE_INSTANCE"])
        return 0
    verb = next((a for a in argv if not a.startswith("-")), "")
    if verb and verb not in KNOWN_VERBS and verb != "poweroff":
        print(f"Unknown command verb '{verb}'.", file=sys.stderr)
        return 1
    print(f"fake systemctl: {' '.join(argv)!r} is not modelled (only `systemctl poweroff`)", file=sys.stderr)
    return 1
