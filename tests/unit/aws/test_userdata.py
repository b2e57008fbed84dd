"""User-data renderers (pure): what each role's node is told, and that nothing secret is in it."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

from components.addons.selected import addon_facts
from components.aws import userdata as ud
from components.aws.secrets import pki_secret_document
from tests.unit.aws.conftest import settings_for
from tests.unit.helpers import raised_problems

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ck8s-{}-AbCdEf"
LB = "ck8s-prod-us-east-1-api-nlb-0123456-0123456789abcdef.elb.us-east-1.amazonaws.com"
# A PEM the size of a real RSA-2048 certificate, so size checks mean something.
PEM = "-----BEGIN CERTIFICATE-----\n" + ("M" * 64 + "\n") * 18 + "-----END CERTIFICATE-----\n"


def boots(settings: Any) -> tuple[ud.ClusterBoot, ud.ControlPlaneBoot]:
    c = ud.cluster_boot(settings, ARN.format("join-auth"), "ck8s-mint-worker-token", addon_facts(settings))
    cp = ud.control_plane_boot(settings, ARN.format("ca-keys"))
    return c, cp


def files(text: str) -> dict[str, str]:
    assert text.startswith("#cloud-config\n")
    doc = yaml.safe_load(text)
    assert doc["runcmd"] == [[ud.SCRIPT_PATH]]
    return ud.decoded_files(text)


def env_of(text: str) -> dict[str, str]:
    """Source the env file in bash and read the variables back: proves the quoting."""
    script = files(text)[f"{ud.CONFIG_DIR}/node.env"]
    out = subprocess.run(
        ["bash", "-c", 'set -a; eval "$1"; env -0', "_", script], capture_output=True, check=True
    ).stdout.decode()
    pairs = (item.split("=", 1) for item in out.split("\0") if item.startswith("CK8S_"))
    return dict(pairs)


def test_bootstrap_config_carries_no_ca_material_and_the_node_is_told_the_api_lb_name() -> None:
    c, cp = boots(settings_for("aws-prod"))
    text = ud.render_bootstrap_control_plane(c, cp)
    config = yaml.safe_load(files(text)[f"{ud.CONFIG_DIR}/bootstrap.yaml"])
    assert not {"ca-crt", "client-ca-crt", "ca-key", "client-ca-key", "extra-sans"} & set(config)
    # the DNS name is looked up on the node (docs/adr/0019): user-data holds the NLB's plan-time name
    assert env_of(text)["CK8S_API_LB_NAME"] == "ck8s-prod-us-east-1-api"
    # every feature named: `bootstrap --file` turns each one it leaves unset off (network and DNS too)
    assert config["cluster-config"] == {
        "network": {"enabled": True}, "dns": {"enabled": True}, "gateway": {"enabled": False},
        "ingress": {"enabled": False}, "load-balancer": {"enabled": False}, "local-storage": {"enabled": False},
        "metrics-server": {"enabled": True}, "cloud-provider": "external",
    }
    assert config["pod-cidr"] == "10.1.0.0/16" and config["service-cidr"] == "10.152.183.0/24"
    assert "PRIVATE KEY" not in text and "CERTIFICATE" not in text


def test_ca_keys_from_secrets_manager_complete_the_bootstrap_config() -> None:
    """The node appends the secret's YAML to the file from user-data: the result must parse as one map."""
    c, cp = boots(settings_for("aws-prod"))
    base = files(ud.render_bootstrap_control_plane(c, cp))[f"{ud.CONFIG_DIR}/bootstrap.yaml"]
    key = "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n"
    sans = f"extra-sans:\n- {LB}\n"  # what the node script's api_sans writes
    merged = yaml.safe_load(base + pki_secret_document(PEM, key, PEM.replace("M", "N"), key.replace("abc", "def"))
                            + sans)
    assert merged["ca-key"] == key and merged["client-ca-key"] == key.replace("abc", "def")
    assert merged["ca-crt"] == PEM and merged["client-ca-crt"] == PEM.replace("M", "N")
    assert merged["extra-sans"] == [LB]


def test_cloud_provider_is_external_and_the_ccm_cannot_be_turned_off_on_aws() -> None:
    """Without the CCM nothing deletes the Node of a worker that gave up after it registered (a node
    cannot delete its own Node), and no Node gets a providerID: the settings refuse it."""
    c, cp = boots(settings_for("aws-prod"))
    assert ud.bootstrap_config(c, cp)["cluster-config"]["cloud-provider"] == "external"
    for stack in ("aws-prod", "aws-dev", "aws-elastic"):
        problems = raised_problems(settings_for, stack, lambda raw: raw.setdefault("gpuStack", {}).setdefault(
            "addons", {}).update(awsCloudControllerManager={"enabled": False}))
        assert [p for p, _ in problems] == ["settings.gpuStack.addons.awsCloudControllerManager.enabled"], problems
        assert "no node may delete its own Node object" in problems[0][1]


def test_feature_settings_reach_the_bootstrap_file() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["kubernetes"]["features"] = {"metricsServer": False, "localStorage": True, "gateway": True}

    c, cp = boots(settings_for("aws-prod", change))
    features = ud.bootstrap_config(c, cp)["cluster-config"]
    assert features["metrics-server"] == {"enabled": False} and features["local-storage"] == {"enabled": True}
    assert features["gateway"] == {"enabled": True} and features["network"] == {"enabled": True}


def test_a_bootstrap_file_without_features_is_refused() -> None:
    c, cp = boots(settings_for("aws-prod"))
    with pytest.raises(ValueError, match="every feature set explicitly"):
        ud.bootstrap_config(ud.ClusterBoot(**{**c.__dict__, "features": ()}), cp)


def test_env_tells_each_role_who_it_is_and_where_its_secrets_are() -> None:
    s = settings_for("aws-prod")
    c, cp = boots(s)
    seed = env_of(ud.render_bootstrap_control_plane(c, cp))
    assert seed["CK8S_ROLE"] == "bootstrap"
    assert seed["CK8S_PKI_SECRET_ID"] == ARN.format("ca-keys")
    assert seed["CK8S_PEER_JOIN"] == "true"  # 3 control planes: a replaced seed must join, not bootstrap
    assert seed["CK8S_SNAP_CHANNEL"] == "1.34-classic/stable"
    joiner = env_of(ud.render_joining_control_plane(c))
    assert joiner["CK8S_ROLE"] == "control-plane" and "CK8S_PKI_SECRET_ID" not in joiner
    assert joiner["CK8S_AUTH_SECRET_ID"] == ARN.format("join-auth")
    worker = env_of(ud.render_gpu_worker(c, ud.worker_boot(s, s.node_pools[0])))
    # a worker is told no secret at all: it mints its token through the SSM document
    assert worker["CK8S_ROLE"] == "worker" and "CK8S_PKI_SECRET_ID" not in worker
    assert "CK8S_AUTH_SECRET_ID" not in worker and worker["CK8S_MINT_DOCUMENT"] == "ck8s-mint-worker-token"
    assert worker["CK8S_REGION"] == "us-east-1" and worker["CK8S_CLUSTER"] == "ck8s-prod-us-east-1"


def test_single_control_plane_seed_is_told_it_has_no_peers() -> None:
    c, cp = boots(settings_for("aws-dev"))
    text = ud.render_bootstrap_control_plane(c, cp)
    assert env_of(text)["CK8S_PEER_JOIN"] == "false"
    assert f"{ud.CONFIG_DIR}/join.yaml" not in files(text)


def test_env_values_survive_shell_quoting() -> None:
    c, _ = boots(settings_for("aws-dev"))
    odd = ud.ClusterBoot(**{**c.__dict__, "auth_secret_id": "a b'c\"$(touch /tmp/x)"})
    assert env_of(ud.render_joining_control_plane(odd))["CK8S_AUTH_SECRET_ID"] == "a b'c\"$(touch /tmp/x)"


def test_worker_labels_taints_and_dra_label() -> None:
    s = settings_for("aws-prod")
    c, _ = boots(s)
    pool = s.node_pools[0]
    text = ud.render_gpu_worker(c, ud.worker_boot(s, pool))
    labels = dict(item.split("=", 1) for item in env_of(text)["CK8S_NODE_LABELS"].split())
    assert labels == {"workload": "inference", "ck8s-gpu/pool": "l40s", "nvidia.com/dra-kubelet-plugin": "true"}
    # Taints at registration; labels never as --node-labels (that would replace k8sd's role labels).
    join = yaml.safe_load(files(text)[f"{ud.CONFIG_DIR}/join.yaml"])
    assert join == {"extra-node-kubelet-args": {"--register-with-taints": "nvidia.com/gpu=present:NoSchedule"}}


def test_device_plugin_mode_has_no_dra_label_and_valueless_taints_render() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw.setdefault("gpuStack", {})["allocation"] = "device-plugin"
        raw["smokeTest"] = {"enabled": False}  # the smoke test proves the DRA path only
        raw["nodePools"][0]["taints"] = [{"key": "gpu", "effect": "NoExecute"}, {"key": "a", "value": "b"}]

    s = settings_for("aws-prod", change)
    w = ud.worker_boot(s, s.node_pools[0])
    assert "nvidia.com/dra-kubelet-plugin" not in dict(w.labels)
    assert w.taints == ("gpu:NoExecute", "a=b:NoSchedule")


def test_dra_gates_before_1_34_reach_every_component_and_serve_the_beta_apis() -> None:
    def on_133(raw: dict[str, Any]) -> None:
        raw["kubernetes"] = {"track": "1.33-classic", "featureGates": ["DynamicResourceAllocation=true"]}

    s = settings_for("aws-prod", on_133)
    c, cp = boots(s)
    gate = {"--feature-gates": "DynamicResourceAllocation=true"}
    boot = ud.bootstrap_config(c, cp)
    assert boot["extra-node-kube-apiserver-args"] == {
        **gate,
        "--runtime-config": "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true",
    }
    for component in ("kube-controller-manager", "kube-scheduler", "kubelet"):
        assert boot[f"extra-node-{component}-args"] == gate
    assert ud.control_plane_join_config(c)["extra-node-kube-apiserver-args"] == boot["extra-node-kube-apiserver-args"]
    worker = ud.worker_join_config(c, ud.worker_boot(s, s.node_pools[0]))
    assert set(worker) == {"extra-node-kubelet-args"}
    assert worker["extra-node-kubelet-args"]["--feature-gates"] == "DynamicResourceAllocation=true"


def test_1_32_serves_v1beta1_only_and_1_34_needs_nothing() -> None:
    def on_132(raw: dict[str, Any]) -> None:
        raw["kubernetes"] = {"track": "1.32-classic", "featureGates": ["DynamicResourceAllocation=true"]}
        raw["smokeTest"] = {"enabled": False}  # the smoke chart needs 1.33's v1beta2 (components/validate.py)

    assert ud.runtime_config(settings_for("aws-prod", on_132)) == "resource.k8s.io/v1beta1=true"
    s = settings_for("aws-prod")
    assert ud.runtime_config(s) is None
    c, cp = boots(s)
    assert not any(k.startswith("extra-node-") for k in ud.bootstrap_config(c, cp))


def test_the_node_script_is_embedded_without_comments_and_executable() -> None:
    c, cp = boots(settings_for("aws-prod"))
    text = ud.render_bootstrap_control_plane(c, cp)
    doc = yaml.safe_load(text)
    script = next(f for f in doc["write_files"] if f["path"] == ud.SCRIPT_PATH)
    assert script["encoding"] == "gz+b64"  # cloud-init inflates it (cc_write_files.py)
    script = {**script, "content": ud.decoded_files(text)[ud.SCRIPT_PATH]}
    source = ud.SCRIPT_SOURCE.read_text()
    code = [ud._TRAILING_COMMENT.sub("", line.lstrip()) for line in source.splitlines()
            if not line.lstrip().startswith("#") or "shellcheck" in line]
    embedded = script["content"].splitlines()
    assert "# SSM invocation polls" in source and "# SSM invocation polls" not in script["content"]  # trailing
    assert embedded[0] == "#!/bin/bash" and "components/aws/scripts/ck8s-node.sh" in embedded[1]
    assert [line.lstrip() for line in embedded[2:]] == code  # the same code, in order, indentation aside
    # here-document bodies (Python) keep their indentation byte for byte, and bash still parses it all
    heredocs = re.findall(r"<<'EOF'\n(.*?\nEOF)\n", source, flags=re.S)
    assert len(heredocs) == 2 and all(body in script["content"] for body in heredocs)
    assert subprocess.run(["bash", "-n"], input=script["content"], text=True, check=False).returncode == 0
    assert len(script["content"]) < len(source) - 2000  # what the compaction is for: EC2's 16 KiB
    assert script["permissions"] == "0700"
    assert all(f["permissions"] == "0600" for f in doc["write_files"] if f["path"] != ud.SCRIPT_PATH)


def test_the_largest_user_data_keeps_headroom_under_ec2s_limit() -> None:
    """Bootstrap with DRA gates on every component and peers (the largest role), 2 KiB to spare."""
    def gates(raw: dict[str, Any]) -> None:
        raw["kubernetes"] = {"track": "1.33-classic", "featureGates": ["DynamicResourceAllocation=true"]}

    c, cp = boots(settings_for("aws-prod", gates))
    assert len(ud.render_bootstrap_control_plane(c, cp).encode()) < ud.USER_DATA_LIMIT - 2048


def test_oversized_user_data_fails_at_render_time() -> None:
    c, cp = boots(settings_for("aws-prod"))
    huge = ud.ClusterBoot(**{**c.__dict__, "feature_gates": (("kube-apiserver", "A" * 8000 + "=true"),)})
    with pytest.raises(ValueError, match="EC2 accepts 16384"):
        ud.render_bootstrap_control_plane(huge, cp)


# ------------------------------------------------------- the cluster's snap pin (docs/adr/0039)


def _pin(raw: dict[str, Any], **snap: Any) -> None:
    raw.setdefault("kubernetes", {})["snap"] = snap or {"version": "v1.34.11",
                                                       "revisions": {"amd64": 4104, "arm64": 4105}}


def _with_arm64_pool(raw: dict[str, Any]) -> None:
    _pin(raw)
    # an arm64 GPU pool (Graviton g5g: AWS's accelerated computing specifications)
    pool = {"name": "arm", "instanceType": "g5g.xlarge", "desiredSize": 1, "maxSize": 2,
            "gpu": {"count": 1, "productName": "NVIDIA T4G", "memoryGiB": 16},
            "ami": "/ck8s-gpu/images/gpu-node/ubuntu-24.04/arm64/nvidia-595-server-open"}
    raw["nodePools"] = [*raw["nodePools"], pool]


def test_a_pinned_stack_tells_every_node_its_architectures_revision() -> None:
    settings = settings_for("aws-prod", _with_arm64_pool)
    c, cp = boots(settings)
    cps = [env_of(ud.render_bootstrap_control_plane(c, cp)), env_of(ud.render_joining_control_plane(c))]
    boots_ = {p.name: ud.worker_boot(settings, p) for p in settings.node_pools}
    # env_of reads user-data whose only command is the script: EFA pools (a sysctl first) aside
    workers = {n: env_of(ud.render_gpu_worker(c, w)) for n, w in boots_.items() if not w.hugepages_2mi}
    assert {"arm", "l40s"} <= set(workers) and boots_["arm"].arch == "arm64"
    for env in [*cps, *(w for n, w in workers.items() if n != "arm")]:
        assert (env["CK8S_SNAP_REVISION"], env["CK8S_SNAP_VERSION"]) == ("4104", "v1.34.11")
    assert (workers["arm"]["CK8S_SNAP_REVISION"], workers["arm"]["CK8S_SNAP_VERSION"]) == ("4105", "v1.34.11")


def _unpinned(raw: dict[str, Any]) -> None:
    raw["kubernetes"].pop("snap", None)


def test_an_unpinned_stack_installs_what_the_channel_serves() -> None:
    c, cp = boots(settings_for("aws-prod", _unpinned))
    env = env_of(ud.render_bootstrap_control_plane(c, cp))
    assert "CK8S_SNAP_REVISION" not in env and "CK8S_SNAP_VERSION" not in env
    assert env["CK8S_SNAP_CHANNEL"] == "1.34-classic/stable"


def _arm64_unpinned(raw: dict[str, Any]) -> None:
    _with_arm64_pool(raw)
    del raw["kubernetes"]["snap"]["revisions"]["arm64"]


def _pin_without_hold(raw: dict[str, Any]) -> None:
    _pin(raw)
    raw["kubernetes"]["holdSnapRefresh"] = False


@pytest.mark.parametrize(("change", "paths"), [
    # another minor's patch
    (lambda raw: _pin(raw, version="v1.35.7", revisions={"amd64": 4507}), {"settings.kubernetes.snap.version"}),
    # an architecture the nodes have, unpinned
    (_arm64_unpinned, {"settings.kubernetes.snap.revisions.arm64"}),
    # snapd would refresh the revision away
    (_pin_without_hold, {"settings.kubernetes.holdSnapRefresh"}),
])
def test_a_pin_that_cannot_hold_is_refused_naming_its_field(change: Any, paths: set[str]) -> None:
    from components.settings.load import SettingsError

    with pytest.raises(SettingsError) as exc:
        settings_for("aws-prod", change)
    found = {p for p, _ in exc.value.problems}
    assert paths <= found, exc.value.problems


@pytest.mark.parametrize("revisions", [{"amd64": True}, {"amd64": "4104"}, {"amd64": 0}, {"riscv64": 1}, {}])
def test_a_revision_is_a_store_number_of_a_known_architecture(revisions: dict[str, Any]) -> None:
    from components.settings.load import SettingsError

    with pytest.raises(SettingsError) as exc:
        settings_for("aws-prod", lambda raw: _pin(raw, version="v1.34.11", revisions=revisions))
    assert any(p.startswith("settings.kubernetes.snap") for p, _ in exc.value.problems), exc.value.problems
