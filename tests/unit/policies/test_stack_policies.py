from typing import Any

import pytest
from pulumi_policy.policy import _NotApplicableError

from components.policies.helm import RELEASE
from components.policies.stack import (
    CA_CERT,
    INSTANCE,
    PRIVATE_KEY,
    PROD_PROTECTS_DR_STATE,
    PROD_SINGLE_CONTROL_PLANE,
    SMOKE_RUN_TYPE,
    SMOKE_TEST_REQUIRED,
    SMOKE_TEST_TYPE,
)
from tests.unit.policies.helpers import facts, res, stack_violations

SMOKE_COMPONENT = res(SMOKE_TEST_TYPE, {}, name="smoke")
RUN_SPEC = {"expectations": {"cases": [{"case": "gpus", "pods": 1, "device_class": "gpu.nvidia.com"}]}}
SMOKE = [SMOKE_COMPONENT, res(SMOKE_RUN_TYPE, {"spec": RUN_SPEC}, name="smoke-run")]
PROD = {"environment": "prod", "production": True, "controlPlane": {"count": 3}, "network": {"azCount": 3},
        "protection": {"protect": True, "retainOnDelete": True},
        "backup": {"region": "us-west-2"}}


def test_dra_gpu_stacks_need_an_enabled_smoke_test() -> None:
    assert stack_violations(SMOKE_TEST_REQUIRED, SMOKE, facts()) == []
    assert "no ck8s-gpu:index:SmokeTest" in stack_violations(SMOKE_TEST_REQUIRED, [], facts())[0][0]
    disabled = stack_violations(SMOKE_TEST_REQUIRED, SMOKE, facts(smokeTest={"enabled": False}))
    assert [m for m, _ in disabled] == ["smokeTest.enabled is false: a DRA GPU stack must prove the allocation "
                                        "path on every up"]


def test_device_plugin_stacks_are_out_of_the_smoke_tests_scope() -> None:
    # The settings refuse the smoke test there (it proves the DRA path), so the policy stands aside.
    with pytest.raises(_NotApplicableError) as exc:
        stack_violations(SMOKE_TEST_REQUIRED, [], facts(gpuStack={"allocation": "device-plugin"}))
    assert "device-plugin" in (exc.value.reason or "")


DRA_DRIVER = {"chart": "dra-driver-nvidia-gpu", "repositoryOpts": {"repo": "https://x"},
              "values": {"gpuResourcesEnabledOverride": True}}
OPERATOR = {"chart": "gpu-operator", "repositoryOpts": {"repo": "https://x"}, "values": {}}


def test_without_settings_the_releases_decide() -> None:
    dra = res(RELEASE, DRA_DRIVER, name="dra")
    assert stack_violations(SMOKE_TEST_REQUIRED, [dra])
    run = res(SMOKE_RUN_TYPE, {"spec": RUN_SPEC}, name="smoke-run")
    run.dependencies = [dra]
    assert stack_violations(SMOKE_TEST_REQUIRED, [dra, SMOKE_COMPONENT, run]) == []
    with pytest.raises(_NotApplicableError) as exc:
        stack_violations(SMOKE_TEST_REQUIRED, [res(RELEASE, OPERATOR, name="op")])  # device plugin (default)
    assert "device plugin only" in (exc.value.reason or "")
    with pytest.raises(_NotApplicableError) as exc:
        stack_violations(SMOKE_TEST_REQUIRED, [])
    assert "no GPU advertiser" in (exc.value.reason or "")


def ca(protect: bool) -> list[Any]:
    key = res(PRIVATE_KEY, {"algorithm": "ECDSA"}, name="ca-key", protect=protect)
    cert = res(CA_CERT, {"isCaCertificate": True, "privateKeyPem": "<computed>"}, name="ca", protect=protect)
    cert.dependencies = [key]
    client_key = res(PRIVATE_KEY, {"algorithm": "ECDSA"}, name="admin-key")  # reissuable: not DR state
    return [key, cert, client_key]


def test_prod_with_everything_protected_passes() -> None:
    secret = res("aws:secretsmanager/secret:Secret", {"name": "join"}, protect=True)
    cp = res(INSTANCE, {"tags": {"ck8s-gpu/role": "control-plane"}}, name="cp-0", protect=True)
    worker = res(INSTANCE, {"tags": {"ck8s-gpu/role": "worker"}}, name="w-0")
    assert stack_violations(PROD_PROTECTS_DR_STATE, [*ca(True), secret, cp, worker], facts(**PROD)) == []


def test_prod_unprotected_state_violates_per_resource() -> None:
    secret = res("aws:secretsmanager/secret:Secret", {"name": "join"})
    cp = res(INSTANCE, {"tags": {"ck8s-gpu/role": "control-plane"}}, name="cp-0")
    found = stack_violations(PROD_PROTECTS_DR_STATE, [*ca(False), secret, cp], facts(**PROD))
    urns = {u for _, u in found}
    names = sorted(u.rsplit("::", 1)[-1] for u in urns if u)
    assert names == ["ca", "ca-key", "cp-0", "r"]
    assert any("cluster CA private key" in m for m, _ in found)


def test_prod_settings_must_protect_retain_and_back_up() -> None:
    bare = facts(environment="prod", production=True, controlPlane={"count": 3}, network={"azCount": 3})
    messages = [m for m, _ in stack_violations(PROD_PROTECTS_DR_STATE, [], bare)]
    assert len(messages) == 3
    assert messages[0].startswith("protection.protect is false in prod")
    assert messages[1].startswith("protection.retainOnDelete is false in prod")
    assert messages[2].startswith("no backup")


def test_dr_policy_does_not_apply_outside_prod_or_without_settings() -> None:
    assert stack_violations(PROD_PROTECTS_DR_STATE, ca(False), facts()) == []
    with pytest.raises(_NotApplicableError):
        stack_violations(PROD_PROTECTS_DR_STATE, ca(False))


def test_single_control_plane_in_prod_is_advisory() -> None:
    single = facts(**{**PROD, "controlPlane": {"count": 1}})
    assert "1 control plane(s) in prod" in stack_violations(PROD_SINGLE_CONTROL_PLANE, [], single)[0][0]
    assert stack_violations(PROD_SINGLE_CONTROL_PLANE, [], facts(**PROD)) == []
    assert stack_violations(PROD_SINGLE_CONTROL_PLANE, [], facts(controlPlane={"count": 1})) == []  # dev
    # The resources win over the settings when they exist.
    cps = [res(INSTANCE, {"tags": {"ck8s-gpu/role": "control-plane"}}, name=f"cp-{i}") for i in range(2)]
    assert "2 control plane(s)" in stack_violations(PROD_SINGLE_CONTROL_PLANE, cps, facts(**PROD))[0][0]
    assert PROD_SINGLE_CONTROL_PLANE.enforcement_level is not None
    assert PROD_SINGLE_CONTROL_PLANE.enforcement_level.value == "advisory"


# --- issue 45: the smoke test must run, and run after the GPU stack --------------------------------

def _run(spec: Any, deps: list[Any] | None = None) -> Any:
    r = res(SMOKE_RUN_TYPE, {"spec": spec}, name="smoke-run")
    r.dependencies = deps or []
    return r


@pytest.mark.parametrize(("resources", "said"), [
    (lambda dra: [dra, SMOKE_COMPONENT], "nothing runs the pods"),  # the component alone
    (lambda dra: [dra, SMOKE_COMPONENT, _run({"expectations": {"cases": []}}, [dra])], "runs no GPU pod"),
    (lambda dra: [dra, SMOKE_COMPONENT, _run({"expectations": {"cases": [{"pods": 0}]}}, [dra])], "runs no GPU pod"),
    (lambda dra: [dra, SMOKE_COMPONENT, _run({"expectations": {"cases": [{"pods": True}]}}, [dra])],
     "runs no GPU pod"),  # a bool is no count
    (lambda dra: [dra, SMOKE_COMPONENT, _run(RUN_SPEC)], "does not wait for dra"),  # races the driver
    (lambda dra: [dra, SMOKE_COMPONENT, _run(RUN_SPEC, [SMOKE_COMPONENT])], "does not wait for dra"),
    (lambda dra: [res(RELEASE, {**OPERATOR, "values": {"gpuCluster": {"deployCR": True},
                                                       "devicePlugin": {"enabled": False}}}, name="op"),
                  SMOKE_COMPONENT, _run(RUN_SPEC)], "does not wait for op"),  # the operator's GPUCluster
])
def test_a_smoke_test_that_does_not_run_or_does_not_wait_is_refused(resources: Any, said: str) -> None:
    found = stack_violations(SMOKE_TEST_REQUIRED, resources(res(RELEASE, DRA_DRIVER, name="dra")), facts())
    assert any(said in m for m, _ in found), found


def test_a_run_that_waits_through_another_resource_passes() -> None:
    dra = res(RELEASE, DRA_DRIVER, name="dra")
    chart = res(RELEASE, {"chart": "gpu-smoke-test", "values": {}}, name="smoke-chart")
    chart.dependencies = [dra]
    assert stack_violations(SMOKE_TEST_REQUIRED, [dra, chart, SMOKE_COMPONENT, _run(RUN_SPEC, [chart])],
                            facts()) == []
