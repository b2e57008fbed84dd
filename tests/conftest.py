"""Every test tier: where skips must not pass (CI=true, CK8S_GPU_REQUIRE_TOOLS=1), a skip is a failure.

Tiers are markers (CONTRIBUTING.md): everything under tests/integration/ is `integration` whether
or not its module says so (a new file cannot land in the fast tier by forgetting the mark);
`slow` marks the pure but slow modules; `make check` runs the rest.

The rule and its allow-list live in tests/helpers/tools.py (skip_failure, ALLOWED_SKIPS); these two
hooks apply it to every report, so a skip raised anywhere (pytest.skip in a test or fixture, a
skip marker, a module-level skip or importorskip, an empty parametrize) cannot let CI pass.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from tests.helpers.tools import skip_failure


def _enforce(report: pytest.TestReport | pytest.CollectReport, path: Path, rootpath: Path) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):  # an xfail reports as skipped: not ours to judge
        return
    longrepr = report.longrepr
    reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr).removeprefix("Skipped: ")
    where = path.relative_to(rootpath).as_posix() if path.is_relative_to(rootpath) else path.as_posix()
    failure = skip_failure(where, reason)
    if failure is not None:
        report.outcome = "failed"
        report.longrepr = failure


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _enforce(report, item.path, item.config.rootpath)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    _enforce(report, collector.path, collector.config.rootpath)
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration = config.rootpath / "tests" / "integration"
    for item in items:
        if item.path.is_relative_to(integration) and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)

