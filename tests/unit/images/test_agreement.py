"""components/images/agreement.py: the image lines a stack boots carry its track and snap pin."""

from __future__ import annotations

import copy
from typing import Any

from components.images.agreement import agreement_problems, booted_lines
from components.images.settings import image_settings_from_config, parse_image_settings
from components.plan.run import stack_file
from components.settings.load import SETTINGS_KEY, read_stack_file
from components.tables.paths import PROJECT_DIR
from components.validate import parse

COMMITTED = [(p.stem.removeprefix("Pulumi."), image_settings_from_config(read_stack_file(p), str(p)))
             for p in sorted((PROJECT_DIR / "images").glob("Pulumi.*.yaml"))]


def _stack(name: str) -> Any:
    return parse(copy.deepcopy(read_stack_file(stack_file(name))[SETTINGS_KEY]))


def test_every_committed_stack_agrees_with_the_lines_it_boots() -> None:
    for name in ("aws-dev", "aws-elastic", "aws-airgap", "aws-prod"):
        s = _stack(name)
        assert booted_lines(s, COMMITTED), name  # each boots at least one committed line
        assert agreement_problems(s, COMMITTED) == [], name


def test_a_line_left_at_the_old_pin_is_named_at_the_field_that_boots_it() -> None:
    s = _stack("aws-dev")
    line = {"region": "us-east-1", "driverBranch": "595", "kernelModules": "open",
            "kubernetes": {"track": "1.34-classic", "snap": {"version": "v1.34.4", "revision": 5324}}}
    old = [("us-east-1", parse_image_settings(line, "t"))]
    [(path, why)] = agreement_problems(s, old)
    assert path == "settings.nodePools[0].ami"
    assert "amd64 revision 5324 (the stack pins 5325)" in why and "pulumi up -C images -s us-east-1" in why


def test_a_line_published_in_another_region_is_not_the_stacks() -> None:
    s = _stack("aws-dev")
    line = {"region": "eu-north-1", "kubernetes": {"track": "1.34-classic",
                                                   "snap": {"version": "v1.34.4", "revision": 1}}}
    assert agreement_problems(s, [("eu", parse_image_settings(line, "t"))]) == []
