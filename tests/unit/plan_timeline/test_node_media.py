"""A node's boot media read from its user-data, and what it changes in the graph: a snap from the
image waits for no NAT route, preloaded images add containerd's side-load and swap the rows whose
ranges include pulls for their preloaded variants."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from components.plan.durations import DURATIONS, PRELOADED_VARIANTS
from components.plan.mockengine import Recorded
from components.plan.node_media import NodeMedia, env_assignments, node_media
from components.plan.run import Plan
from components.plan.timeline import INSTANCE, LAUNCH_TEMPLATE, Timeline
from components.plan.timeline_docs import DOCS_NOW
from components.plan.timeline_of_plan import timeline_for_plan

from .conftest import planned

ENV = "/etc/ck8s-gpu/node.env"


def cloud_config(*env: str) -> str:
    body = "".join(f"      {line}\n" for line in env)
    return ("#cloud-config\nwrite_files:\n"
            f"  - path: {ENV}\n    owner: root:root\n    permissions: '0600'\n    content: |\n{body}"
            "  - path: /usr/local/sbin/ck8s-node.sh\n    content: |\n"
            "      CK8S_SNAP_SOURCE=${CK8S_SNAP_SOURCE:-store}\n      CK8S_OFFLINE=1\n")


def test_media_comes_from_the_env_file_not_the_script() -> None:
    text = cloud_config("CK8S_ROLE=worker", "CK8S_SNAP_SOURCE=image", "CK8S_IMAGES_PRELOADED=1",
                        "CK8S_OFFLINE=0", "CK8S_REGISTRY_MIRROR=123456789012.dkr.ecr.eu-west-1.amazonaws.com")
    assert env_assignments(text)["CK8S_ROLE"] == "worker"
    assert node_media(text) == NodeMedia(snap_from_image=True, images_preloaded=True, offline=False,
                                         mirror="123456789012.dkr.ecr.eu-west-1.amazonaws.com")
    # the script's own lines (a default, a literal) are not the node's settings
    assert node_media(cloud_config("CK8S_ROLE=worker")) == NodeMedia()


def test_a_shell_user_data_and_quoted_values_are_read_too() -> None:
    script = "#!/bin/bash\nexport CK8S_SNAP_SOURCE='image'\nCK8S_IMAGES_PRELOADED=\"1\"\nCK8S_REGISTRY_MIRROR=\n"
    assert node_media(script) == NodeMedia(snap_from_image=True, images_preloaded=True)


def test_no_user_data_means_the_store_and_the_registries() -> None:
    assert node_media(None) == NodeMedia() == NodeMedia(False, False, False, "")


@pytest.mark.parametrize(("env", "message"), [
    (("CK8S_SNAP_SOURCE=disk",), r"CK8S_SNAP_SOURCE='disk' \(expected image or store\)"),
    (("CK8S_IMAGES_PRELOADED=yes", "CK8S_OFFLINE=true"), r"CK8S_IMAGES_PRELOADED='yes'.*; CK8S_OFFLINE='true'"),
    (("CK8S_OFFLINE=1", "CK8S_SNAP_SOURCE=store", "CK8S_IMAGES_PRELOADED=1"), "cannot reach the Snap Store"),
    (("CK8S_OFFLINE=1", "CK8S_SNAP_SOURCE=image", "CK8S_IMAGES_PRELOADED=0"), "offline nodes carry every image"),
])
def test_values_outside_the_contract_are_refused_naming_each(env: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        node_media(cloud_config(*env))


# --------------------------------------------------------------------------------------------
# the graph: aws-dev as committed (snap from the image, images preloaded) against the same plan
# with its user-data saying store and pulled


def _set_user_data(r: Recorded, old_new: dict[str, str]) -> Recorded:
    value = r.inputs["userData"]
    text = base64.b64decode(value).decode() if r.type == LAUNCH_TEMPLATE else value
    for old, new in old_new.items():
        assert old in text, f"{r.name}: its user-data has no {old}"
        text = text.replace(old, new)
    encoded = base64.b64encode(text.encode()).decode() if r.type == LAUNCH_TEMPLATE else text
    return replace(r, inputs={**r.inputs, "userData": encoded})


def store_and_pulled(plan: Plan) -> Plan:
    swap = {"CK8S_SNAP_SOURCE=image": "CK8S_SNAP_SOURCE=store", "CK8S_IMAGES_PRELOADED=1": "CK8S_IMAGES_PRELOADED=0"}
    return replace(plan, resources=[_set_user_data(r, swap) if r.type in (INSTANCE, LAUNCH_TEMPLATE) else r
                                    for r in plan.resources])


def _nat_routes(tl: Timeline) -> set[str]:
    return {s.id for s in tl.steps.values() if s.type == "aws:ec2/route:Route"
            and any(tl.steps[d].key == "aws-nat" for d in s.deps)}


def _by_name(tl: Timeline, name: str) -> tuple[str, ...]:
    return next(s for s in tl.steps.values() if s.name == name).deps


def test_a_snap_from_the_image_waits_for_no_nat_route_and_the_store_snap_does() -> None:
    image = timeline_for_plan(planned("aws-dev"), now=DOCS_NOW)
    store = timeline_for_plan(store_and_pulled(planned("aws-dev")), now=DOCS_NOW)
    for node in ("cp-0", "pool l4"):
        local = next(s for s in image.steps.values() if s.name == f"{node} snap install")
        remote = next(s for s in store.steps.values() if s.name == f"{node} snap install")
        assert local.key == "snap-install-local" and not _nat_routes(image) & set(local.deps)
        assert remote.key == "snap-install" and _nat_routes(store) <= set(remote.deps)
    assert store.media["cp-0"] == NodeMedia() and image.media["cp-0"].snap_from_image


def test_preloaded_images_add_the_side_load_that_node_ready_waits_for() -> None:
    image = timeline_for_plan(planned("aws-dev"), now=DOCS_NOW)
    store = timeline_for_plan(store_and_pulled(planned("aws-dev")), now=DOCS_NOW)
    for node, member in (("cp-0", "k8s bootstrap"), ("pool l4", "k8s join")):
        sideload = f"synthetic:{node} containerd side-load"
        ready = image.steps[f"synthetic:{node} node Ready"]
        assert image.steps[sideload].key == "containerd-sideload" and sideload in ready.deps
        # containerd starts with the bootstrap or join: the side-load starts with it
        assert image.steps[sideload].deps == image.steps[f"synthetic:{node} {member}"].deps
        assert ready.key == "node-ready-cni-preloaded"
        assert store.steps[f"synthetic:{node} node Ready"].key == "node-ready-cni" and sideload not in store.steps
    # every release and the smoke run take their preloaded variant only when every node is preloaded
    image_keys = {s.key for s in image.steps.values()}
    store_keys = {s.key for s in store.steps.values()}
    assert {"helm-gpu-operator-preloaded", "smoke-run-preloaded"} <= image_keys
    assert not image_keys & set(PRELOADED_VARIANTS)  # no row with pulls is left
    assert not store_keys & set(PRELOADED_VARIANTS.values())
    assert image.total[1] < store.total[1]


def test_a_pulled_node_waits_for_the_nat_routes_before_it_is_ready() -> None:
    store = timeline_for_plan(store_and_pulled(planned("aws-dev")), now=DOCS_NOW)
    assert _nat_routes(store) <= set(_by_name(store, "pool l4 node Ready"))


def test_the_node_script_reaches_aws_apis_through_nat_or_the_endpoints() -> None:
    """ck8s-node.sh fetches its secrets (a worker its token, through SSM) before bootstrap or join:
    without VPC endpoints that is through the NAT routes (aws-dev), with them through them (aws-airgap)."""
    dev = timeline_for_plan(planned("aws-dev"), now=DOCS_NOW)
    assert _nat_routes(dev) <= set(_by_name(dev, "cp-0 k8s bootstrap"))
    airgap = timeline_for_plan(planned("aws-airgap"), now=DOCS_NOW)
    endpoints = {s.id for s in airgap.steps.values() if s.type == "aws:ec2/vpcEndpoint:VpcEndpoint"
                 and s.name.rsplit("-", 1)[-1] in ("secretsmanager", "ssm", "ec2", "elasticloadbalancing")}
    assert endpoints and endpoints <= set(_by_name(airgap, "cp-0 k8s bootstrap"))
    assert endpoints <= set(_by_name(airgap, "pool l4 k8s join"))


def test_every_variant_row_is_a_row_and_never_longer_than_the_pulled_one() -> None:
    for pulled, preloaded in PRELOADED_VARIANTS.items():
        assert DURATIONS[preloaded].high < DURATIONS[pulled].high, preloaded
        assert DURATIONS[preloaded].low >= DURATIONS["pod-start-preloaded"].low, preloaded
