"""Region parity with a long environment (ADR 0042): a name hashed in one region and readable in
another (or hashed with another digest) is still the same region-scoped name, not a violation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.aws.inventory import api_lb_name, node_role_name
from components.plan.artifacts import resources_document
from components.plan.run import plan_config
from components.settings.load import SETTINGS_KEY
from components.stamping import parity
from components.stamping.derive import derive
from components.stamping.parity import format_violations, violations
from components.validate import from_config as settings_from_config
from tests.unit.stamping.helpers import template

# 22 characters: in us-east-2 the control-plane role's name just fits (ck8s-<env>-us-east-2 is 37),
# in ap-southeast-4 it is hashed; the API load balancer's is hashed in both, each with its digest.
ENV = "research-inference-ml1"


def _long_dev() -> tuple[dict[str, Any], Any]:
    config = copy.deepcopy(template("aws-dev")[0])
    config[SETTINGS_KEY]["environment"] = ENV
    return config, settings_from_config(config, "aws-dev (long)", offline=True)


def _plan(region: str) -> tuple[list[dict[str, Any]], Any]:
    config, settings = _long_dev()
    stamped = derive("aws-dev", config, settings, region, {})
    plan = plan_config(stamped.config, stamped.stack, stamped.stack)
    return resources_document(plan)["resources"], stamped.settings


@pytest.fixture(scope="module")
def plans() -> dict[str, tuple[list[dict[str, Any]], Any]]:
    return {region: _plan(region) for region in ("us-east-2", "ap-southeast-4")}


def test_hashed_and_readable_forms_of_one_name_are_parity(plans: dict[str, Any]) -> None:
    (a, a_settings), (b, b_settings) = plans["us-east-2"], plans["ap-southeast-4"]
    short, long = a_settings.cluster_name, b_settings.cluster_name
    # Not vacuous: the role is readable in one region and hashed in the other, the NLB hashed in both.
    assert node_role_name(short, "control-plane") == f"{short}-control-plane-role"
    assert node_role_name(long, "control-plane") != f"{long}-control-plane-role"
    assert api_lb_name(short) != f"{short}-api" and api_lb_name(long) != f"{long}-api"
    assert api_lb_name(short) in json.dumps(a) and api_lb_name(long) in json.dumps(b)
    diff = violations(a, a_settings, b, b_settings)
    assert diff.empty, "parity violated:\n" + "\n".join(format_violations(diff))


def test_without_the_hashed_forms_the_normaliser_would_report_them(
    plans: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parity, "hashed_stems", lambda stem: [])
    (a, a_settings), (b, b_settings) = plans["us-east-2"], plans["ap-southeast-4"]
    diff = violations(a, a_settings, b, b_settings)
    assert not diff.empty
    assert "control-plane-role" in "\n".join(format_violations(diff))
