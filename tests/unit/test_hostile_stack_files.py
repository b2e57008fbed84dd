"""Stack files a hostile or careless user writes (issue 14): each ends in exit 2 and one clean
message naming the field, never a traceback, a hang or a 1 MB echo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from components.cli.main import main
from components.settings.load import MAX_DEPTH, MAX_VALUES

HEAD = "config:\n  ck8s-gpu:settings:\n    platform: kind\n"


def _plan(tmp_path: Path, body: bytes, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    (tmp_path / "Pulumi.bad.yaml").write_bytes(body)
    code = main(["plan", "--stack", "bad", "--stacks-dir", str(tmp_path), "--quiet"])
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.mark.parametrize(("body", "path", "fragment"), [
    (HEAD.encode() + b"    environment: \"\xff\xfe\"\n", "file", "not valid UTF-8 (byte 66"),
    (HEAD.encode() + b"    tags: " + b"[" * 5000 + b"]" * 5000 + b"\n", "file", f"nested deeper than {MAX_DEPTH}"),
    (HEAD.encode() + b"    environment: " + b"x" * 1_000_000 + b"\n", "settings.environment", "should match"),
    (HEAD.encode() + b"    queues:\n      - name: q\n        gpu: {quota: .nan}\n", "settings.queues[0].gpu.quota",
     "finite number"),
    (HEAD.encode() + b"    queues:\n      - name: q\n        gpu: {limit: -.inf}\n", "settings.queues[0].gpu.limit",
     "finite number"),
    (HEAD.encode() + b"    queues:\n      - name: q\n        gpu: {overQuotaWeight: -2}\n",
     "settings.queues[0].gpu.overQuotaWeight", "greater than or equal to 0"),
    (HEAD.encode() + b"    queues:\n      - name: q\n        gpu: {quota: " + b"9" * 400 + b"}\n",
     "settings.queues[0].gpu.quota", "valid number"),
    (HEAD.encode() + b"    queues:\n      - name: q\n        priority: 4294967296\n", "settings.queues[0].priority",
     "less than or equal to 2147483647"),
])
def test_bad_bytes_and_numbers_end_in_one_clean_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        body: bytes, path: str, fragment: str) -> None:
    code, out = _plan(tmp_path, body, capsys)
    assert code == 2, out
    assert f"  {path}: " in out and fragment in out, out
    assert "Traceback" not in out and len(out) < 2_000


@pytest.mark.parametrize(("body", "where", "line", "column"), [
    # an unclosed flow sequence: the error is at the end of the file, the caret where the list began
    (HEAD + "    region: [eu-north-1\n", "line 5, column 1", "4 |     region: [eu-north-1", 13),
    # a key indented one space less than its siblings
    (HEAD + "   region: eu-north-1\n", "line 4, column 4", "4 |    region: eu-north-1", 4),
    # a tab where YAML allows only spaces
    (HEAD + "    tags:\n\tteam: ml\n", "line 5, column 1", "5 | \\tteam: ml", 1),
])
def test_a_yaml_error_names_its_line_and_points_at_the_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, where: str, line: str, column: int) -> None:
    code, out = _plan(tmp_path, body.encode(), capsys)
    assert code == 2, out
    lines = out.splitlines()
    [reason] = [x for x in lines if x.startswith("  file: not valid YAML at ")]
    assert where in reason and "\\n" not in reason, reason
    shown = lines.index(f"    {line}")
    caret = lines[shown + 1]
    assert caret.strip() == "^"
    # the caret sits under the column the line's text starts counting from (after "    <n> | ")
    assert caret.index("^") - (lines[shown].index(" | ") + 3) == column - 1, out


def test_a_huge_bad_value_is_cut_short_in_the_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _plan(tmp_path, HEAD.encode() + b"    region: " + b"x" * 1_000_000 + b"\n", capsys)
    assert code == 2 and "settings.region" in out and "x..." in out and len(out) < 2_000


def test_an_alias_bomb_is_refused_without_expanding_it(tmp_path: Path) -> None:
    """Nine levels of ten aliases: 10^9 values if anything walked it. In a subprocess with a
    timeout, so a regression fails instead of hanging the suite."""
    lines = [HEAD.rstrip("\n"), "    gpuStack:", "      addons:", "        kaiScheduler:", "          values:",
             "            a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"            a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    (tmp_path / "Pulumi.bomb.yaml").write_text("\n".join(lines) + "\n")
    run = subprocess.run([sys.executable, "-c", "import sys; from components.cli.main import main; "
                          f"sys.exit(main(['plan', '--stack', 'bomb', '--stacks-dir', {str(tmp_path)!r}, '--quiet']))"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stderr
    assert f"file: expands to more than {MAX_VALUES} values" in run.stderr and "Traceback" not in run.stderr


def test_every_long_reason_is_cut_where_the_message_is_made() -> None:
    from components.settings.load import SettingsError

    message = SettingsError("x", [("settings.a", "y" * 10_000)]).message
    assert "(9500 more characters)" in message and len(message) < 700


def test_anchors_and_aliases_within_reason_still_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = (HEAD + "    tags: &t {team: ml}\n    gpuStack:\n      addons:\n        kaiScheduler:\n"
            "          values: {podLabels: *t}\n").encode()
    code, out = _plan(tmp_path, body, capsys)
    assert code == 0, out


AWS = "config:\n  ck8s-gpu:settings:\n    platform: aws\n    region: eu-north-1\n"


@pytest.mark.parametrize(("body", "path", "fragment"), [
    (AWS + "    network: {vpcCidr: 'fd00::/56'}\n", "settings.network.vpcCidr", "an IPv4 block from /16 to /24"),
    (AWS + "    network: {vpcCidr: 10.0.0.0/26}\n", "settings.network.vpcCidr", "an IPv4 block from /16 to /24"),
    (AWS + "    network: {vpcCidr: 10.0.0.0/8}\n", "settings.network.vpcCidr", "AWS allows /16-/28"),
    (HEAD + "    kubernetes: {podCidr: 'fd00:10::/56'}\n", "settings.kubernetes.podCidr", "must be IPv4 on kind"),
    (AWS + "    network: {apiAllowList: [203.0.113.0/24, 198.51.100.0/24, 203.0.113.0/24]}\n",
     "settings.network.apiAllowList[2]", "already allowed by apiAllowList[0]"),
    (AWS.replace("eu-north-1", "eu-westeros-1"), "settings.region", "no AWS region botocore"),
    (AWS + "    backup: {region: us-nowhere-2}\n", "settings.backup.region", "no AWS region botocore"),
])
def test_settings_the_plan_would_refuse_later_are_refused_first(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 body: str, path: str, fragment: str) -> None:
    """Each of these passed the settings and then crashed the plan (or was accepted and failed at
    `up`): now the settings name the field."""
    code, out = _plan(tmp_path, body.encode(), capsys)
    assert code == 2, out
    assert f"  {path}: " in out and fragment in out, out
    assert "Traceback" not in out


@pytest.mark.parametrize(("pool", "want", "ok"), [
    ("p5.48xlarge", 80, False),   # H100 80GB publishes 79.6 GiB
    ("p5.48xlarge", 79, True),
    ("g6e.xlarge", 48, False),    # L40S publishes 45.0 GiB
    ("g6.xlarge", 24, False),     # L4 publishes 22.5 GiB
    ("g6.xlarge", 22, True),
])
def test_min_memory_is_held_against_what_the_driver_publishes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             pool: str, want: int, ok: bool) -> None:
    body = (AWS + f"    nodePools: [{{name: gpu, instanceType: {pool}}}]\n"
            f"    smokeTest: {{minMemoryGiB: {want}}}\n").encode()
    code, out = _plan(tmp_path, body, capsys)
    if ok:
        assert code == 0, out
    else:
        assert code == 2 and "settings.smokeTest.minMemoryGiB: " in out and "matches no GPU" in out, out
        assert "NVML's framebuffer" in out


def test_pull_secret_names_are_kubernetes_secret_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = (AWS + "    nodePools: [{name: gpu, instanceType: g6.xlarge}]\n"
            "    smokeTest: {imagePullSecrets: [mirror-pull, Mirror_Pull]}\n").encode()
    code, out = _plan(tmp_path, body, capsys)
    assert code == 2 and "settings.smokeTest.imagePullSecrets[1]: 'Mirror_Pull' is no Secret name" in out, out
    assert "imagePullSecrets[0]" not in out
