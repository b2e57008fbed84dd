"""Shared test data for stamping: the committed templates and a fake Automation API boundary."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from components.plan.run import PROJECT_DIR, stack_file
from components.settings.load import read_stack_file
from components.settings.model import Settings
from components.stamping.backend import OnOutput, OpResult
from components.validate import from_config as settings_from_config

DATA = Path(__file__).resolve().parents[2] / "data" / "stamping"
STACKS = PROJECT_DIR / "stacks"


def template(name: str) -> tuple[dict[str, Any], Settings]:
    config = read_stack_file(stack_file(name))
    return config, settings_from_config(config, name, offline=True)


class FakeBackend:
    """Stands in for pulumi.automation: scripted results per stack, records calls and concurrency."""

    def __init__(self, existing: set[str] | None = None, results: dict[str, OpResult | Exception] | None = None,
                 delay: float = 0.0) -> None:
        self.existing = existing or set()
        self.results = results or {}
        self.delay = delay
        self.calls: list[tuple[str, str]] = []
        self.running = 0
        self.max_running = 0
        self._lock = threading.Lock()

    def existing_stacks(self) -> set[str]:
        return set(self.existing)

    def _op(self, op: str, stack: str, on_output: OnOutput) -> OpResult:
        with self._lock:
            self.calls.append((op, stack))
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            on_output(f"{op} of {stack}: working")
            time.sleep(self.delay)
            result = self.results.get(stack, OpResult(ok=True, changes={"create": 3}))
            if isinstance(result, Exception):
                raise result
            return result
        finally:
            with self._lock:
                self.running -= 1

    def preview(self, stack: str, on_output: OnOutput) -> OpResult:
        return self._op("preview", stack, on_output)

    def up(self, stack: str, on_output: OnOutput) -> OpResult:
        return self._op("up", stack, on_output)


def zoned(region: str, override: dict[str, Any] | None = None) -> dict[str, Any]:
    """`override` plus what every stamp of aws-prod must give: its zone-scoped fields are us-east-1's
    (components/stamping/derive.py _zone_scoped), here this region's zones and no reservation."""
    out: dict[str, Any] = {"network": {"availabilityZones": [f"{region}{z}" for z in "abc"]},
                           "nodePools": [{"name": "h100", "availabilityZone": f"{region}a",
                                          "capacityReservation": None, "placement": None}]}
    for key, value in (override or {}).items():
        if key == "nodePools":
            pools = {p["name"]: p for p in out["nodePools"]}
            for pool in value:
                pools[pool["name"]] = {**pools.get(pool["name"], {}), **pool}
            out["nodePools"] = list(pools.values())
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out
