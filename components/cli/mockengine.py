"""Moved to components/plan/mockengine.py (the plan owns the mock engine; cli only calls it).
Kept so callers and scripts that import it from here keep working."""

from ..plan.mockengine import *  # noqa: F403
from ..plan.mockengine import PlanMocks, PlanRun, Recorded, RecordingMonitor, run_program

__all__ = ["PlanMocks", "PlanRun", "Recorded", "RecordingMonitor", "run_program"]
