"""scripts/bench_pod_start.py's pure parts: the kubelet's pull events, the registry copy's index,
the pod, and the section it writes (the benchmark itself needs root and the tools: not a test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tools import load_script

bp = load_script("bench_pod_start")
IMAGE = "localhost:5000/ck8s-bench/small@sha256:" + "a" * 64


@pytest.mark.parametrize(("text", "seconds"), [
    ("0s", 0.0), ("1.5s", 1.5), ("812.3ms", 0.8123), ("1m2.5s", 62.5), ("250µs", 0.00025), ("1h0m0s", 3600.0)])
def test_go_duration(text: str, seconds: float) -> None:
    assert bp.go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1.5", "1.5 s", "s", "2days"])
def test_go_duration_refuses_what_go_does_not_print(text: str) -> None:
    with pytest.raises(ValueError, match="not a Go duration"):
        bp.go_duration(text)


def test_pull_read_from_the_kubelets_event() -> None:
    msgs = ["Pulling image \"x\"",
            f'Successfully pulled image "{IMAGE}" in 1.234s (1.5s including waiting). Image size: 209715200 bytes.']
    assert bp.pull_from_events(msgs, IMAGE) == bp.Pull(IMAGE, 1.234, 1.5, 209715200)


def test_present_image_is_no_pull_in_both_wordings() -> None:
    assert bp.pull_from_events([f'Container image "{IMAGE}" already present on machine'], IMAGE) is None
    assert bp.pull_from_events(
        [f'Container image "{IMAGE}" already present on machine and can be accessed by the pod'], IMAGE) is None


def test_events_of_another_image_or_none_are_refused() -> None:
    other = IMAGE.replace("small", "large")
    with pytest.raises(bp.BenchError, match="no Pulled event"):
        bp.pull_from_events([f'Successfully pulled image "{other}" in 1s (1s including waiting). Image size: 1 bytes.',
                             f'Container image "{other}" already present on machine'], IMAGE)


def test_registry_copy_keeps_one_of_the_two_names_of_one_manifest() -> None:
    desc = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + "b" * 64, "size": 9}
    by_tag, by_digest = {**desc, "annotations": {"n": "tag"}}, {**desc, "annotations": {"n": "digest"}}
    index = {"schemaVersion": 2, "manifests": [by_tag, by_digest]}
    assert bp.single_manifest_index(index) == {"schemaVersion": 2, "manifests": [by_tag]}
    with pytest.raises(bp.BenchError, match="one manifest"):
        bp.single_manifest_index({"manifests": [desc, {**desc, "digest": "sha256:" + "c" * 64}]})


def test_pod_pins_the_node_and_never_pulls_a_present_image() -> None:
    pod = bp.pod_manifest("p", IMAGE)
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": bp.NODE}
    (c,) = pod["spec"]["containers"]
    assert (c["image"], c["imagePullPolicy"]) == (IMAGE, "IfNotPresent")


def _results() -> Any:
    res = bp.Results(image_bytes={"small": 5_000_000, "large": 216_000_000}, tier_start=12.0, warmup=2.0)
    for i, t in enumerate((1.0, 1.2, 1.1)):
        res.runs.append(bp.Run("preloaded", "small", t, t + 0.3, None, import_seconds=0.5))
        res.runs.append(bp.Run("pull", "small", t + 0.2, t + 0.5, bp.Pull(IMAGE, 0.1, 0.1, 5_000_000)))
        res.runs.append(bp.Run("preloaded", "large", t, t + 0.3, None))
        res.runs.append(bp.Run("pull", "large", t + 2.0 + i, t + 2.3, bp.Pull(IMAGE, 2.0, 2.0, 216_000_000)))
    return res


def test_section_reports_median_min_max_and_the_rate() -> None:
    text = bp.markdown(_results(), 2, 3, 8.0)
    assert text.startswith(bp.START) and text.endswith(bp.END)
    assert "Machine: 2 cores" in text
    assert "| small | preloaded | 1.10 (1.00-1.20) |" in text
    assert "| large | pull | 4.20 (3.00-5.10) |" in text
    # added by the pull = median pull - median preloaded (4.2 - 1.1); MB/s = 216 MB / 2.0 s
    assert "| large | 216.0 | 3.10 | 108 |" in text
    assert "not network transfer" in text and "216 MB is 1.7 s more" in text
    assert "`small` 0.50 (0.50-0.50) s" in text  # the import before the preloaded pods, small only here


def test_section_replaces_only_its_own_markers(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Other\n\n<!-- other:start -->\nkept\n<!-- other:end -->\n")
    first = bp.markdown(_results(), 2, 3, 8.0)
    bp.write_marked_section(doc, bp.START, bp.END, first, bp.HEADING)
    second = bp.markdown(_results(), 4, 3, 8.0)
    bp.write_marked_section(doc, bp.START, bp.END, second, bp.HEADING)
    text = doc.read_text()
    assert text.count(bp.START) == 1 and "Machine: 4 cores" in text and "Machine: 2 cores" not in text
    assert f"## {bp.HEADING}" in text and "<!-- other:start -->\nkept\n<!-- other:end -->" in text
