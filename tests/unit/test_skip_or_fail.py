"""The skip-or-fail rule (tests/helpers/tools.py, hooks in tests/conftest.py), proven on inner pytest runs:
where skips must not pass (CI=true, CK8S_GPU_REQUIRE_TOOLS=1) every skip fails, however it was raised,
except the ALLOWED_SKIPS (the kind tier: Docker never runs in CI), which fail only under their own switch."""

from __future__ import annotations

import pytest

from tests.helpers.tools import ALLOWED_SKIPS, KIND_NEEDS

pytest_plugins = ["pytester"]

SWITCHES = ("CI", "CK8S_GPU_REQUIRE_TOOLS", "CK8S_GPU_REQUIRE_KIND")
# The inner runs use the project's real hooks, not a copy of them.
CONFTEST = "from tests.conftest import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401\n"

SKIPS = '''
import pytest

from tests.helpers.tools import skip_or_fail


@pytest.fixture
def missing_tool():
    skip_or_fail("`frobnicate` is not installed")


def test_helper_skip():
    skip_or_fail("`frobnicate` is not installed")


def test_plain_skip():
    pytest.skip("no network here")


def test_fixture_skip(missing_tool):
    pass


@pytest.mark.skip(reason="switched off by a marker")
def test_marker_skip():
    pass


@pytest.mark.parametrize("stack", [])
def test_empty_parametrize(stack):
    pass


@pytest.mark.xfail(reason="a known bug", strict=True)
def test_xfail_is_not_a_skip():
    assert False


def test_passes():
    pass
'''


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in SWITCHES:
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    return pytester


def run(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--import-mode=importlib", "-rA")


def test_skips_stay_skips_where_they_may(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_inner=SKIPS)
    result = run(inner)
    result.assert_outcomes(passed=1, skipped=5, xfailed=1)
    result.stdout.no_fnmatch_line("*turns this skip into a failure*")


@pytest.mark.parametrize(("switch", "value"), [("CI", "true"), ("CK8S_GPU_REQUIRE_TOOLS", "1")])
def test_under_ci_every_skip_fails(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, switch: str,
                                   value: str) -> None:
    monkeypatch.setenv(switch, value)
    inner.makepyfile(test_inner=SKIPS)
    result = run(inner)
    # skips from a fixture, a marker or an empty parametrize happen at setup: those failures count as errors
    result.assert_outcomes(passed=1, failed=2, errors=3, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for reason in ("`frobnicate` is not installed", "no network here", "switched off by a marker",
                   "got empty parameter set*"):
        result.stdout.fnmatch_lines([f"*{switch}={value} turns this skip into a failure: {reason}*"])
    result.stdout.fnmatch_lines(["ERROR *test_fixture_skip*"])
    result.stdout.fnmatch_lines(["FAILED *test_helper_skip*"])


def test_under_ci_an_importorskip_fails_the_collection(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    inner.makepyfile(test_optional='''
import pytest

chart_tool = pytest.importorskip("no_such_chart_tool_installed")


def test_charts():
    pass
''')
    assert run(inner).ret == pytest.ExitCode.NO_TESTS_COLLECTED  # scripts/pytest.sh fails that exit too
    monkeypatch.setenv("CI", "true")
    result = run(inner)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error stops the run
    result.stdout.fnmatch_lines(["*CI=true turns this skip into a failure: could not import "
                                 "'no_such_chart_tool_installed'*"])


KIND_TEST = f'''
from tests.helpers.tools import skip_or_fail


def test_kind_up():
    skip_or_fail({KIND_NEEDS!r} + "Docker daemon not reachable")


def test_not_the_kind_tier():
    skip_or_fail("kind stack test needs nothing, but it is not the kind tier's skip")
'''


def test_the_kind_tier_may_skip_in_ci_and_fails_under_its_own_switch(inner: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (inner.path / "tests" / "integration").mkdir(parents=True)
    (inner.path / "tests" / "integration" / "test_kind_stack.py").write_text(KIND_TEST)
    (inner.path / "test_elsewhere.py").write_text(KIND_TEST)  # the same reason in another file: not allowed
    monkeypatch.setenv("CI", "true")
    result = run(inner)
    result.assert_outcomes(skipped=1, failed=3)
    # reported at the test's own line, not inside the helper
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] tests/integration/test_kind_stack.py:6: kind stack test needs: "
                                 "Docker daemon not reachable"])
    monkeypatch.setenv("CK8S_GPU_REQUIRE_KIND", "1")
    result = run(inner)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*CK8S_GPU_REQUIRE_KIND=1 turns this skip into a failure: kind stack test needs: "
                                 "Docker daemon not reachable*"])


def test_every_allowed_skip_names_an_existing_file_and_why() -> None:
    from tests.helpers.tools import TOOLS_DIR

    for allowed in ALLOWED_SKIPS:
        assert (TOOLS_DIR.parent / allowed.path).is_file(), allowed.path
        assert len(allowed.why) > 20, allowed
