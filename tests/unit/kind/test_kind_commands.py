"""KindCluster's create/update/delete scripts, run by /bin/sh against stand-in `kind` and `docker`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from components.kind import commands
from components.tables import pins
from tests.helpers.tools import skip_or_fail

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n"

STUB_KIND = r"""#!/bin/sh
echo "kind $*" >>"$STUB_DIR/calls"
case "$1 $2" in
  "version ") echo "kind $STUB_KIND_VERSION go1.24.6 linux/amd64" ;;
  "get clusters") [ -n "$STUB_CLUSTERS" ] && printf '%s\n' "$STUB_CLUSTERS"; true ;;
  "get kubeconfig") printf '%s' "$STUB_KUBECONFIG" ;;
  "create cluster")
    while [ $# -gt 0 ]; do
      case "$1" in
        --config) cp "$2" "$STUB_DIR/seen-config.yaml" ;;
        --kubeconfig) echo "$2" >"$STUB_DIR/seen-kubeconfig-path" ;;
      esac
      shift
    done
    echo "Creating cluster ... (kind prints progress on stdout too)" ;;
  "delete cluster") echo "Deleting cluster ..." ;;
  *) echo "stub kind: unexpected $*" >&2; exit 99 ;;
esac
"""

STUB_DOCKER = r"""#!/bin/sh
echo "docker $*" >>"$STUB_DIR/calls"
exit "$STUB_DOCKER_RC"
"""


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("kind", STUB_KIND), ("docker", STUB_DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return tmp_path


def run(script: str, stub_dir: Path, **stub: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": ":".join((str(stub_dir / "bin"), "/usr/bin", "/bin")),
        "HOME": str(stub_dir / "home"),
        "STUB_DIR": str(stub_dir),
        "STUB_KIND_VERSION": stub.pop("kind_version", pins.TOOLS["kind"]),
        "STUB_CLUSTERS": stub.pop("clusters", ""),
        "STUB_KUBECONFIG": KUBECONFIG,
        "STUB_DOCKER_RC": stub.pop("docker_rc", "0"),
        **commands.environment("ck8s-gpu", "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"),
    }
    assert not stub
    # How pulumi-command's local.Command runs it on Linux and macOS.
    return subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True, timeout=60)


def calls(stub_dir: Path) -> list[str]:
    path = stub_dir / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_create_prints_only_the_kubeconfig_and_leaves_the_users_kubeconfig_alone(stubs: Path) -> None:
    result = run(commands.CREATE, stubs)
    assert result.returncode == 0, result.stderr
    assert result.stdout == KUBECONFIG  # kind's chatter went to stderr, never into the secret
    assert "Creating cluster" in result.stderr
    assert (stubs / "seen-config.yaml").read_text() == "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n\n"
    create = next(c for c in calls(stubs) if c.startswith("kind create cluster"))
    assert "--name ck8s-gpu" in create and f"--wait {commands.WAIT}" in create
    written = Path((stubs / "seen-kubeconfig-path").read_text().strip())
    assert not written.exists(), "kind's kubeconfig copy must be a throwaway file, removed afterwards"
    assert not (stubs / "home" / ".kube").exists()
    assert calls(stubs)[-1] == "kind get kubeconfig --name ck8s-gpu"


def test_create_refuses_a_cluster_that_is_not_in_the_state(stubs: Path) -> None:
    result = run(commands.CREATE, stubs, clusters="other\nck8s-gpu")
    assert result.returncode == 1
    assert "a kind cluster named 'ck8s-gpu' exists but is not in this stack's state" in result.stderr
    assert "kind delete cluster --name ck8s-gpu" in result.stderr
    assert not any(c.startswith("kind create") for c in calls(stubs))


def test_create_ignores_clusters_whose_names_merely_contain_ours(stubs: Path) -> None:
    assert run(commands.CREATE, stubs, clusters="ck8s-gpu-old\nmy-ck8s-gpu").returncode == 0


@pytest.mark.parametrize(("have", "ok"), [("v0.29.0", False), ("v0.9.9", False), ("v0.30.0", True), ("v0.31.0", True),
                                          ("v0.100.0", True), ("v1.0.0-alpha", True)])
def test_create_requires_the_pinned_kind_release_or_newer(stubs: Path, have: str, ok: bool) -> None:
    result = run(commands.CREATE, stubs, kind_version=have)
    assert (result.returncode == 0) is ok, result.stderr
    if not ok:
        assert f"kind {have} is older than {pins.TOOLS['kind']}" in result.stderr


def test_scripts_say_what_is_missing(stubs: Path) -> None:
    for script in (commands.CREATE, commands.UPDATE, commands.DELETE):
        down = run(script, stubs, docker_rc="1")
        assert down.returncode == 1 and "the Docker daemon is not reachable" in down.stderr
        (stubs / "bin" / "kind").rename(stubs / "bin" / "kind.off")
        missing = run(script, stubs)
        assert missing.returncode == 1 and "'kind' is not on PATH: install kind v0.30.0 or newer" in missing.stderr
        (stubs / "bin" / "kind.off").rename(stubs / "bin" / "kind")


def test_update_rereads_the_kubeconfig_of_the_existing_cluster(stubs: Path) -> None:
    result = run(commands.UPDATE, stubs, clusters="ck8s-gpu")
    assert result.returncode == 0 and result.stdout == KUBECONFIG
    gone = run(commands.UPDATE, stubs, clusters="")
    assert gone.returncode == 1 and "'ck8s-gpu' is gone" in gone.stderr and gone.stdout == ""


def test_delete_uses_a_throwaway_kubeconfig_and_prints_nothing_on_stdout(stubs: Path) -> None:
    result = run(commands.DELETE, stubs)
    assert result.returncode == 0 and result.stdout == ""
    (delete,) = [c for c in calls(stubs) if c.startswith("kind delete")]
    assert delete.startswith("kind delete cluster --name ck8s-gpu --kubeconfig ")
    assert not Path(delete.split("--kubeconfig ")[1]).exists()


@pytest.mark.parametrize("name", ["CREATE", "UPDATE", "DELETE"])
def test_scripts_pass_shellcheck(tmp_path: Path, name: str) -> None:
    if shutil.which("shellcheck") is None:
        skip_or_fail("shellcheck is not installed (Debian package shellcheck)")
    script = tmp_path / f"{name}.sh"
    script.write_text(getattr(commands, name))
    result = subprocess.run(["shellcheck", "-s", "sh", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
