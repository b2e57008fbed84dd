"""The settings' own rules, run together: every problem of every rule (components/validate.py runs
this first, then the rules of the layers above)."""

from __future__ import annotations

from .model import Settings
from .offline_rules import OFFLINE_RULES
from .problems import Problem
from .rules import RULES


def check(settings: Settings) -> list[Problem]:
    return [problem for rule in (*RULES, *OFFLINE_RULES) for problem in rule(settings)]
