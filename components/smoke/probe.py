"""What a smoke-test container saw: parses the `CK8S-SMOKE ...` lines of its log.

The probe script (charts/gpu-smoke-test/templates/configmap-probe.yaml) prints:
  CK8S-SMOKE begin pod=<pod> container=<c> node=<node> case=<case>
  CK8S-SMOKE nvidia-smi rc=<n> | CK8S-SMOKE nvidia-smi missing
  CK8S-SMOKE uuid <GPU-...|MIG-...>          one per `nvidia-smi -L` device line
  CK8S-SMOKE env GPU_DEVICE_<id>=<device>    variables a simulated driver injects
  CK8S-SMOKE mps pipe=<dir> mounted=<yes|no>  MPS sharing: the pipe directory the driver injected
  CK8S-SMOKE imex channel=<path>             one per IMEX channel device node present
                                             (/dev/nvidia-caps-imex-channels/channel<id>)
  CK8S-SMOKE barrier wait | barrier timeout
  CK8S-SMOKE end rc=<0|1>
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PREFIX = "CK8S-SMOKE "
_ENV = re.compile(r"^GPU_DEVICE_([A-Za-z0-9_]+)=(.*)$")


@dataclass
class ProbeOutput:
    began: bool = False
    pod: str = ""
    container: str = ""
    node: str = ""
    case: str = ""
    nvidia_smi_rc: int | None = None  # None: not run (missing)
    uuids: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    mps_pipe: str | None = None  # CUDA_MPS_PIPE_DIRECTORY; None: not set (no MPS sharing)
    mps_mounted: bool = False  # the directory exists in the container
    imex_channels: list[str] = field(default_factory=list)  # IMEX channel device nodes present
    barrier_timeout: bool = False
    end_rc: int | None = None
    other_lines: list[str] = field(default_factory=list)  # non-probe output, e.g. nvidia-smi errors

    @property
    def gpu_uuids(self) -> list[str]:
        return [u for u in self.uuids if u.startswith("GPU-")]

    @property
    def mig_uuids(self) -> list[str]:
        return [u for u in self.uuids if u.startswith("MIG-")]

    @property
    def env_devices(self) -> list[str]:
        """Device names from `GPU_DEVICE_<sanitized name>=<name>` (fake-gpu-operator's convention:
        the variable suffix is the device name with '-' replaced by '_'); sharing/config variables
        such as GPU_DEVICE_<id>_SHARING_STRATEGY are not devices."""
        return sorted(v for k, v in self.env.items() if k == v.replace("-", "_"))


def parse(text: str) -> ProbeOutput:
    out = ProbeOutput()
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.startswith(PREFIX):
            if line.strip():
                out.other_lines.append(line)
            continue
        key, _, rest = line[len(PREFIX):].partition(" ")
        if key == "begin":
            out.began = True
            fields = dict(part.partition("=")[::2] for part in rest.split())
            out.pod, out.container = fields.get("pod", ""), fields.get("container", "")
            out.node, out.case = fields.get("node", ""), fields.get("case", "")
        elif key == "nvidia-smi":
            if rest.startswith("rc="):
                out.nvidia_smi_rc = _int(rest[3:])
        elif key == "uuid" and rest:
            out.uuids.append(rest.strip())
        elif key == "env":
            m = _ENV.match(rest)
            if m:
                out.env[m.group(1)] = m.group(2)
        elif key == "mps":
            fields = dict(part.partition("=")[::2] for part in rest.split())
            out.mps_pipe = fields.get("pipe") or None
            out.mps_mounted = fields.get("mounted") == "yes"
        elif key == "imex":
            channel = dict(part.partition("=")[::2] for part in rest.split()).get("channel")
            if channel:
                out.imex_channels.append(channel)
        elif key == "barrier" and rest.strip() == "timeout":
            out.barrier_timeout = True
        elif key == "end" and rest.startswith("rc="):
            out.end_rc = _int(rest[3:])
    return out


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None
