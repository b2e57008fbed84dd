"""The one poll loop of the readiness gates: backoff, deadline, early stops, injected clock."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from components.kube.errors import KubeError, KubeUnreachable
from components.kube.wait import PERMANENT_AFTER, Observation, WaitTimeout, backoff_delays, poll


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def scripted(*observations: Observation) -> tuple[list[int], Callable[[], Observation]]:
    """A probe answering the observations in order, the last one forever; counts its calls."""
    calls = [0]
    seq = list(observations)

    def probe() -> Observation:
        calls[0] += 1
        return seq.pop(0) if len(seq) > 1 else seq[0]

    return calls, probe


def describe(elapsed: float, attempts: int, last: Observation) -> str:
    return f"after {elapsed:.0f}s/{attempts}: {last.detail}"


def test_backoff_grows_then_caps() -> None:
    assert list(itertools.islice(backoff_delays(), 7)) == [1, 2, 4, 8, 15, 15, 15]
    assert list(itertools.islice(backoff_delays(first=0.5, factor=3, cap=5), 4)) == [0.5, 1.5, 4.5, 5]


def test_poll_returns_first_done_observation() -> None:
    fc = FakeClock()
    calls, probe = scripted(Observation(False, "a"), Observation(False, "b"), Observation(True, "ok"))
    obs, attempts = poll(probe, timeout_seconds=60, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert (obs.detail, attempts, calls[0]) == ("ok", 3, 3)
    assert fc.sleeps == [1, 2]


def test_poll_times_out_at_the_deadline_with_the_last_observation() -> None:
    fc = FakeClock()
    calls, probe = scripted(Observation(False, "first"), Observation(False, "connection refused"))
    with pytest.raises(WaitTimeout) as exc:
        poll(probe, timeout_seconds=20, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    # 1+2+4+8 = 15s, then the last sleep is cut to the 5s left: never past the deadline.
    assert fc.sleeps == [1, 2, 4, 8, 5]
    assert fc.now == 120.0
    assert str(exc.value) == "after 20s/6: connection refused"
    assert calls[0] == 6  # one last attempt exactly at the deadline


def test_poll_follows_given_delays() -> None:
    fc = FakeClock()
    _, probe = scripted(Observation(False, "no"), Observation(False, "no"), Observation(True, "ok"))
    poll(probe, timeout_seconds=60, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep,
         delays=itertools.repeat(0.5))
    assert fc.sleeps == [0.5, 0.5]


def test_poll_gives_up_after_repeated_permanent_errors_but_not_interleaved_ones() -> None:
    fc = FakeClock()
    denied = Observation(False, "401", permanent=True)
    calls, probe = scripted(denied, denied, denied, Observation(True, "never reached"))
    with pytest.raises(WaitTimeout, match="401"):
        poll(probe, timeout_seconds=900, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert calls[0] == PERMANENT_AFTER

    fc = FakeClock()
    flaky = Observation(False, "refused")
    calls, probe = scripted(denied, denied, flaky, denied, denied, Observation(True, "ok"))
    obs, _ = poll(probe, timeout_seconds=900, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert obs.detail == "ok" and calls[0] == 6


def test_poll_stops_at_once_on_a_fatal_observation() -> None:
    fc = FakeClock()
    calls, probe = scripted(Observation(False, "wrong scope", fatal=True))
    with pytest.raises(WaitTimeout, match="wrong scope"):
        poll(probe, timeout_seconds=900, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert calls[0] == 1 and fc.sleeps == []


def test_a_failed_call_becomes_a_verdict_that_keeps_its_permanence() -> None:
    denied = Observation.failed(KubeError(403, "forbidden", body="forbidden"), "list nodes: ")
    assert not denied.done and denied.permanent
    assert denied.detail == "list nodes: HTTP 403 Forbidden: the kubeconfig's user lacks permission (forbidden)"
    refused = Observation.failed(KubeUnreachable("MaxRetryError: refused"))
    assert (refused.done, refused.permanent, refused.detail) == (False, False, "no response: MaxRetryError: refused")
