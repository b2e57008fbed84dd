"""components/images/repin.py: a pinned stack moves to the next track with its node images in one
step, offline, comments kept; the result passes the settings and the image lines it boots agree
with it (components/images/agreement.py). Revisions for 1.35 here are made up (6101/6104): the
store's are not known to this project (components/tables/pins.py KNOWN_SNAP_REVISIONS)."""

from __future__ import annotations

import pytest
import yaml

from components.images.agreement import agreement_problems
from components.images.repin import ImageLine, repin
from components.images.settings import image_settings_from_config
from components.plan.run import stack_file
from components.settings.load import SETTINGS_KEY, read_stack_file
from components.tables.paths import PROJECT_DIR
from components.upgrade.stackfile import StackFileError
from components.validate import load_stack, parse

REVS = {"amd64": 6101, "arm64": 6104}
LINES = [ImageLine(p.stem.removeprefix("Pulumi."), p.read_text(), image_settings_from_config(read_stack_file(p),
                                                                                              str(p)))
         for p in sorted((PROJECT_DIR / "images").glob("Pulumi.*.yaml"))]


def _settings_of(text: str) -> object:
    return parse(yaml.safe_load(text)["config"][SETTINGS_KEY])


def test_aws_prod_moves_to_1_35_with_its_images_in_one_step() -> None:
    path = stack_file("aws-prod")
    text, settings = path.read_text(), load_stack(path)
    out = repin(text, settings, LINES, "1.35-classic", "v1.35.7", REVS)
    moved = _settings_of(out.stack_text)
    assert moved.kubernetes.track == "1.35-classic"  # type: ignore[attr-defined]
    assert moved.kubernetes.snap.version == "v1.35.7" and moved.kubernetes.snap.revisions == REVS  # type: ignore[attr-defined]
    assert moved.control_plane.ami == (  # type: ignore[attr-defined]
        "/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.35-classic")
    assert {p.ami for p in moved.node_pools} == {  # type: ignore[attr-defined]
        "/ck8s-gpu/images/gpu-node/ubuntu-24.04/amd64/nvidia-595-server-open/k8s-1.35-classic"}
    # the new lines: control plane first, each carrying the new pin, published under the track's parameter
    assert out.rebuild == ("us-east-1-control-plane-k8s-1.35-classic", "us-east-1-k8s-1.35-classic")
    new = [(name, image_settings_from_config(yaml.safe_load(t)["config"], name)) for name, t in out.new_lines]
    assert {(s.track, s.snap.version, s.snap.revision) for _, s in new} == {("1.35-classic", "v1.35.7", 6101)}
    assert agreement_problems(moved, new) == []  # type: ignore[arg-type]
    # comments stay, and only the intended lines changed
    assert [line for line in text.splitlines() if line.lstrip().startswith("#")] == [
        line for line in out.stack_text.splitlines() if line.lstrip().startswith("#")]
    changed = [(a, b) for a, b in zip(text.splitlines(), out.stack_text.splitlines(), strict=True) if a != b]
    assert len(changed) == 6  # track, version, revisions, controlPlane.ami, two pools' ami
    assert "kubernetes.snap: v1.34.4 (amd64 5325, arm64 5328) -> v1.35.7 (amd64 6101, arm64 6104)" in out.changes


def test_the_old_lines_still_serve_the_stacks_left_on_1_34() -> None:
    dev = load_stack(stack_file("aws-dev"))
    assert agreement_problems(dev, [(line.name, line.settings) for line in LINES]) == []


@pytest.mark.parametrize(("revisions", "words"), [
    ({"amd64": 6101}, "give --revision for every architecture the stack pins or boots: arm64"),
    ({**REVS, "riscv64": 1}, "the stack pins or boots no riscv64 revision"),
])
def test_revisions_for_every_pinned_architecture_and_no_other(revisions: dict[str, int], words: str) -> None:
    path = stack_file("aws-prod")
    with pytest.raises(StackFileError, match=words):
        repin(path.read_text(), load_stack(path), LINES, "1.35-classic", "v1.35.7", revisions)


def test_an_unpinned_stack_booting_no_image_line_is_moved_by_upgrade_itself() -> None:
    path = stack_file("kind")
    with pytest.raises(StackFileError, match="boots no image line"):
        repin(path.read_text(), load_stack(path), LINES, "1.35-classic", "v1.35.7", REVS)


def test_an_unpinned_stack_moves_its_track_and_images_and_keeps_no_pin() -> None:
    path = stack_file("aws-dev")
    raw = yaml.safe_load(path.read_text())
    del raw["config"][SETTINGS_KEY]["kubernetes"]["snap"]
    del raw["config"][SETTINGS_KEY]["images"]
    text = yaml.safe_dump(raw, sort_keys=False)
    out = repin(text, _settings_of(text), LINES, "1.35-classic", "v1.35.7", {"amd64": 6101})  # type: ignore[arg-type]
    moved = _settings_of(out.stack_text)
    assert moved.kubernetes.snap is None and moved.kubernetes.track == "1.35-classic"  # type: ignore[attr-defined]
    assert moved.control_plane.ami.endswith("/k8s-1.35-classic")  # type: ignore[attr-defined]


def test_a_stack_file_it_cannot_edit_alone_is_refused_and_nothing_is_written() -> None:
    path = stack_file("aws-prod")
    text = path.read_text()
    block = "snap:\n        version: v1.34.4\n        revisions: {amd64: 5325, arm64: 5328}\n        fromImage: true\n"
    assert block in text
    flow = text.replace(block, "snap: {version: v1.34.4, revisions: {amd64: 5325, arm64: 5328}, fromImage: true}\n")
    with pytest.raises(StackFileError, match="not a block of its own lines"):
        repin(flow, load_stack(path), LINES, "1.35-classic", "v1.35.7", REVS)


def test_a_comment_naming_a_revision_is_left_as_written() -> None:
    path = stack_file("aws-prod")
    text = path.read_text().replace("revisions: {amd64: 5325, arm64: 5328}",
                                    "revisions: {amd64: 5325, arm64: 5328}  # was amd64: 5100")
    out = repin(text, load_stack(path), LINES, "1.35-classic", "v1.35.7", REVS)
    assert "revisions: {amd64: 6101, arm64: 6104}  # was amd64: 5100" in out.stack_text
