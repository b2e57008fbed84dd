"""The autoscaler for real: Karpenter core v1.15.0 (its KWOK cloud provider, the AWS provider's GPU
device model; tools/mod/karpenter) on the local control plane, driving the NodePools the aws
platform renders for two autoscaled pools (components/facts/autoscaling.py), with simulated GPU
nodes that publish their ResourceSlices when they appear (tests/helpers/karpenter.py).

One cluster and one autoscaler for the module; the scenarios run in order and each leaves the
cluster as it found it (no GPU node, no job): a claim of each of two GPU types from zero, a claim
no pool can serve, idle nodes leaving, a node running a job kept through consolidation, the
conformance command's cluster_autoscaling procedure (a pool up and down; the autoscaler stopped),
the autoscaler restarting mid scale-up without launching twice, and KAI gangs held by our gang gate
(tools/mod/ganggate; issue 41): all of a gang's nodes or none.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from components.addons import gang_gate
from components.conformance.autoscaling import cluster_autoscaling
from components.conformance.common import Context
from components.conformance.evidence import Result
from components.facts.autoscaling import DO_NOT_DISRUPT, NODEPOOL_LABEL, existing_node_class_manifest, nodepool_manifest
from components.kube.client import api_client
from components.plan.run import plan_stack
from components.settings import parse_settings
from components.settings.model import DEFAULT_GPU_TAINT, Settings
from components.smoke.gateway import KubeGateway
from components.smoke.run import Ref, cleanup
from components.tables.instance_types import AUTOSCALER_UNMODELED, GPU_INSTANCE_TYPES, gpu_facts
from components.tables.labels import GANG_GATE, POOL_TAG
from tests.fakes.kai.crds import POD_GROUP_CRD
from tests.helpers import gang_gate as gg
from tests.helpers import karpenter as kp
from tests.helpers.controller_env import ClusterEnv, wait_established
from tests.helpers.tools import cluster_bin_dir, load_tool, skip_or_fail

pytestmark = pytest.mark.integration

lc = load_tool("localcluster")

# Two autoscaled pools from zero, as an aws stack declares them; 10 s idle so the test sees them go.
SETTINGS: dict[str, Any] = {
    "platform": "aws", "environment": "ci", "region": "eu-north-1",
    "nodePools": [
        {"name": "h100", "instanceType": "p5.48xlarge", "autoscaling": {"maxSize": 2, "scaleDownAfter": "10s"}},
        {"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 3, "scaleDownAfter": "10s"}},
    ],
}
H100, L4 = "p5.48xlarge", "g6.xlarge"
TOLERATE = [{"key": DEFAULT_GPU_TAINT.key, "operator": "Exists", "effect": DEFAULT_GPU_TAINT.effect}]
LAUNCH_SECONDS = 120


def product(instance_type: str) -> str:
    facts = gpu_facts(instance_type)
    assert facts is not None
    return facts.product_name


class Env(ClusterEnv):
    def __init__(self, cluster: Any, karpenter: kp.Karpenter, publisher: kp.SlicePublisher, settings: Settings):
        super().__init__(cluster)
        self.karpenter, self.publisher, self.settings = karpenter, publisher, settings
        self.gate: gg.GangGate | None = None  # the gang gate, once its fixture started it

    def node_claims(self) -> list[dict[str, Any]]:
        return self.items("nodeclaims")

    def debug(self) -> str:
        return (f"--- karpenter log (tail) ---\n{self.karpenter.tail()}\n"
                f"--- nodeclaims ---\n{self.kubectl('get', 'nodeclaims', '-o', 'wide', check=False)}"
                f"\n--- publisher errors ---\n{self.publisher.errors[-5:]}"
                + (f"\n--- gang gate log (tail) ---\n{self.gate.tail()}" if self.gate else ""))

    def wait(self, what: str, predicate: Callable[[], Any], timeout: float = LAUNCH_SECONDS) -> Any:
        return super().wait(what, predicate, timeout)

    def run_jobs(self, *pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Create the pods (with their claim templates) and wait until each runs; their pods by name."""
        self.cluster.apply([obj for pod in pods for obj in pod])
        names = [pod[-1]["metadata"]["name"] for pod in pods]
        return self.wait(f"pods {names} running", lambda: self._running(names))

    def _running(self, names: list[str]) -> dict[str, dict[str, Any]] | None:
        pods = {p["metadata"]["name"]: p for p in self.items("pods", "-n", "default")}
        if all(pods.get(n, {}).get("status", {}).get("phase") == "Running" for n in names):
            return {n: pods[n] for n in names}
        return None

    def delete_jobs(self, *names: str) -> None:
        for n in names:
            self.kubectl("delete", "pod", n, "-n", "default", "--ignore-not-found", "--wait=false")
            self.kubectl("delete", "resourceclaimtemplate", n, "-n", "default", "--ignore-not-found")

    def wait_no_gpu_nodes(self, timeout: float = 90) -> None:
        self.wait("no node claim and no GPU node left", lambda: not self.node_claims()
                  and not self.items("nodes", "-l", NODEPOOL_LABEL), timeout=timeout)

    def node_of(self, pod: dict[str, Any]) -> dict[str, Any]:
        node: dict[str, Any] = self.cluster.get_json("node", pod["spec"]["nodeName"])
        return node


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    bin_dir = cluster_bin_dir()
    if lacking := kp.missing(bin_dir):
        skip_or_fail(f"the autoscaler is not built: missing {', '.join(lacking)}; build it with `bash tools/build.sh`")
    work = tmp_path_factory.mktemp("karpenter")
    settings = parse_settings(SETTINGS)
    cluster = lc.LocalCluster(work / "cluster", nodes=0, bin_dir=bin_dir)
    with cluster:
        for crd in sorted(kp.crd_dir(bin_dir).glob("*.yaml")):
            cluster.apply(yaml.safe_load(crd.read_text()))
        cluster.wait_for("Karpenter's CRDs established", lambda: all(
            any(c["type"] == "Established" and c["status"] == "True"
                for c in crd.get("status", {}).get("conditions", []))
            for crd in cluster.get_json("crds")["items"] if crd["spec"]["group"].startswith("karpenter")),
            timeout=60)
        cluster.apply([kp.kwok_node_class()] + [nodepool_manifest(settings, p, kp.KWOK_NODE_CLASS)
                                                for p in settings.node_pools])
        publisher = kp.SlicePublisher(cluster.kubectl, cluster.kubeconfig, bin_dir / "kubectl").start()
        karpenter = kp.Karpenter(work / "karpenter", cluster.kubeconfig, bin_dir).start()
        try:
            yield Env(cluster, karpenter, publisher, settings)
        finally:
            karpenter.stop()
            publisher.stop()


def test_the_autoscaler_models_every_gpu_type_of_the_table_but_the_refused_ones(env: Env) -> None:
    unmodeled = env.karpenter.unmodeled()
    assert unmodeled is not None, env.karpenter.tail()
    # The settings refuse autoscaling exactly where the autoscaler cannot see a type's GPUs.
    assert set(unmodeled) == set(AUTOSCALER_UNMODELED)
    assert set(unmodeled) < set(GPU_INSTANCE_TYPES)


def test_gpu_claims_of_two_types_launch_one_node_of_each_from_zero(env: Env) -> None:
    assert not env.node_claims() and not env.items("nodes")
    pods = env.run_jobs(kp.gpu_claim_pod("train-h100", product=product(H100), count=8, tolerate=TOLERATE),
                        kp.gpu_claim_pod("serve-l4", product=product(L4), count=1, tolerate=TOLERATE))
    claims = env.node_claims()
    types = sorted(c["metadata"]["labels"].get(kp.INSTANCE_TYPE_LABEL, "") for c in claims)
    assert types == sorted([H100, L4]), [c["metadata"]["name"] for c in claims]
    for pod, itype, pool in ((pods["train-h100"], H100, "h100"), (pods["serve-l4"], L4, "l4")):
        node = env.node_of(pod)
        labels = node["metadata"]["labels"]
        assert labels[kp.INSTANCE_TYPE_LABEL] == itype
        # the labels the pool's fixed nodes get at join (components/facts/nodes.py pool_node_labels)
        assert labels[POOL_TAG] == pool and labels[NODEPOOL_LABEL] == pool
        claim = env.cluster.get_json("resourceclaim", "-n", "default",
                                     pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"])
        results = claim["status"]["allocation"]["devices"]["results"]
        assert {r["pool"] for r in results} == {node["metadata"]["name"]}
        assert len(results) == (8 if itype == H100 else 1)
    env.delete_jobs("train-h100", "serve-l4")
    env.wait_no_gpu_nodes()


def test_a_claim_no_pool_can_serve_is_named_in_an_event_and_launches_nothing(env: Env) -> None:
    # No pool offers a B200; and the L4 pool's single-GPU nodes cannot hold two in one claim.
    env.cluster.apply(kp.gpu_claim_pod("wants-b200", product="NVIDIA B200", count=1, tolerate=TOLERATE)
                      + kp.gpu_claim_pod("two-l4", product=product(L4), count=2, tolerate=TOLERATE))
    for pod in ("wants-b200", "two-l4"):
        events = env.wait(f"Karpenter's event on {pod}", lambda p=pod: kp.karpenter_events(env.kubectl, p))
        # events.go PodFailedToScheduleEvent; the reason is the DRA hop: no instance type's devices fit
        assert any("no instance type can satisfy the allocation" in m for m in events), events
    time.sleep(5)  # a launch would have happened in a batch window (1 s idle, 5 s at most)
    assert env.node_claims() == []
    env.delete_jobs("wants-b200", "two-l4")


def test_a_node_running_a_job_is_kept_and_leaves_once_idle(env: Env) -> None:
    pods = env.run_jobs(kp.gpu_claim_pod("long-train", product=product(L4), count=1, tolerate=TOLERATE,
                                         annotations={DO_NOT_DISRUPT: "true"}))
    node = pods["long-train"]["spec"]["nodeName"]
    time.sleep(15)  # 1.5 x scaleDownAfter: WhenEmpty never takes a node that runs a pod
    assert [n["metadata"]["name"] for n in env.items("nodes", "-l", NODEPOOL_LABEL)] == [node]
    env.delete_jobs("long-train")
    t0 = time.monotonic()
    env.wait_no_gpu_nodes()
    assert time.monotonic() - t0 >= 5  # not before scaleDownAfter (10 s, less the poll)


def _conformance(env: Env, timeout: float) -> Result:
    """The conformance command's cluster_autoscaling procedure, in a namespace of its own, cleaned
    up as the command cleans up (components/cli/conformance.py)."""
    gw = KubeGateway(api_client(env.cluster.kubeconfig.read_text()))
    ns = f"conformance-{secrets.token_hex(3)}"
    ctx = Context(gw, "ck8s-gpu.local/probe:none", ns, timeout, print)
    gw.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    ctx.created.append(Ref("v1", "Namespace", ns, None))
    try:
        return cluster_autoscaling(ctx)
    finally:
        assert cleanup(gw, ctx.created) == []


def test_the_conformance_procedure_sees_a_pool_scale_up_and_down_and_names_a_stopped_autoscaler(env: Env) -> None:
    r = _conformance(env, timeout=120)
    assert (r.status, r.outcome) == ("Implemented", "passed"), f"{r.notes}\n{env.debug()}"
    # the cheaper pool (one GPU a node), from zero, and back: the notes say so
    assert r.notes.startswith("a pending pod claiming one NVIDIA L4 GPU scaled NodePool l4 from 0 to 1 nodes in ")
    assert "and back in" in r.notes
    assert not env.node_claims() and not env.items("nodes", "-l", NODEPOOL_LABEL)
    # The autoscaler down: the pod pends, nothing launches, and the notes name the hop and the silence.
    env.karpenter.stop()
    try:
        r = _conformance(env, timeout=20)
    finally:
        env.karpenter.start()
    assert (r.status, r.outcome) == ("Not Implemented", "failed"), r.notes
    assert "no NodeClaim for NodePool l4 within 20s" in r.notes
    assert "Karpenter said nothing about the pod or the NodePool" in r.notes
    env.wait_no_gpu_nodes()


def test_the_autoscaler_restarting_mid_scale_up_launches_once(env: Env) -> None:
    # The instance takes 10 s to register; Karpenter dies right after launching it and comes back.
    env.cluster.apply(kp.kwok_node_class(registration_delay="10s"))
    try:
        env.cluster.apply(kp.gpu_claim_pod("resume-l4", product=product(L4), count=1, tolerate=TOLERATE))
        launched = env.wait("resume-l4's node claim launched", lambda: [
            c for c in env.node_claims() if c.get("status", {}).get("providerID")])
        env.karpenter.stop(kill=True)
        env.karpenter.start()
        pods = env.wait("resume-l4 running", lambda: env._running(["resume-l4"]))
        claims = env.node_claims()
        # the restarted autoscaler adopted the launch in flight: one claim, the instance it launched
        assert [c["metadata"]["name"] for c in claims] == [launched[0]["metadata"]["name"]]
        assert pods["resume-l4"]["spec"]["nodeName"] == launched[0]["status"]["providerID"].removeprefix("kwok://")
        assert len(env.items("nodes", "-l", NODEPOOL_LABEL)) == 1
    finally:
        env.cluster.apply(kp.kwok_node_class())
        env.delete_jobs("resume-l4")
    env.wait_no_gpu_nodes()


def test_the_gates_service_account_may_only_remove_its_gate(env: Env) -> None:
    """The add-on's policy on a real API server (components/addons/gang_gate.py pod_update_policy):
    the controller's service account may take GANG_GATE off a pod, and change nothing else its role's
    pod `update` reaches. Runs before the gate starts (the `gate` fixture), which would release the
    probe pod itself."""
    objs = [o for o in gang_gate.objects(env.settings) if o["kind"] != "Deployment"]
    env.kubectl("create", "namespace", gang_gate.NAMESPACE, check=False)
    env.cluster.apply(objs)
    other = "example.com/not-ours"
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gate-vap-probe", "namespace": "default"},
             "spec": {"schedulingGates": [{"name": GANG_GATE}, {"name": other}],
                      "containers": [{"name": "c", "image": "registry.example.internal/probe:1"}]}}
    env.cluster.apply([probe])

    def ours(pod: dict[str, Any]) -> None:
        pod["spec"]["schedulingGates"] = [{"name": other}]

    # Each refused change rides on the one allowed change (our gate off), so it alone is judged.
    def image(pod: dict[str, Any]) -> None:
        ours(pod)
        pod["spec"]["containers"][0]["image"] = "registry.example.internal/evil:1"

    def label(pod: dict[str, Any]) -> None:
        ours(pod)
        pod["metadata"].setdefault("labels", {})["app"] = "frontend"

    def others_gate(pod: dict[str, Any]) -> None:
        pod["spec"]["schedulingGates"] = [{"name": GANG_GATE}]

    def refused(change: Callable[[dict[str, Any]], None], dry_run: bool = True) -> str | None:
        """The pod updated by `change` as the gate's service account (a PUT, the verb its role has):
        None if the API server took it, else kubectl's error (its stderr, in the RuntimeError). A
        server-side dry run passes admission, policies included, and changes nothing: a change
        taken before the API server loaded the policy must not become the pod the next try sees."""
        pod = env.cluster.get_json("pod", "gate-vap-probe", "-n", "default")
        change(pod)
        try:
            env.cluster.kubectl(f"--as={gang_gate.SERVICE_ACCOUNT_USER}", "replace", "-f", "-",
                                *(["--dry-run=server"] if dry_run else []), input=json.dumps(pod))
        except RuntimeError as err:
            return str(err)
        return None

    try:
        # The policy takes effect once the API server has loaded it: wait for the first refusal.
        why = env.wait("the image change refused by the policy", lambda: refused(image), timeout=30)
        assert f"ValidatingAdmissionPolicy '{gang_gate.POD_UPDATE_POLICY}'" in why, why
        assert "spec.containers changed" in why, why
        why = refused(label) or ""
        assert "metadata.labels changed" in why, why
        why = refused(others_gate) or ""
        assert "may only remove its scheduling gate (ck8s-gpu.io/gang), nothing else" in why, why
        assert refused(ours, dry_run=False) is None  # the one change it makes, for real
        pod = env.cluster.get_json("pod", "gate-vap-probe", "-n", "default")
        assert pod["spec"]["schedulingGates"] == [{"name": other}]
        assert pod["spec"]["containers"][0]["image"] == "registry.example.internal/probe:1"
    finally:
        env.kubectl("delete", "pod", "gate-vap-probe", "-n", "default", "--ignore-not-found", "--wait=false")
        env.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy",
                    gang_gate.POD_UPDATE_POLICY, "--ignore-not-found")


@pytest.fixture(scope="module")
def gate(env: Env, tmp_path_factory: pytest.TempPathFactory) -> Iterator[gg.GangGate]:
    """Our gang gate on the module's cluster, judging its two pools (h100=8, l4=1), with KAI's
    PodGroup CRD (the stand-in's: tests/fakes/kai/crds.py)."""
    bin_dir = cluster_bin_dir()
    if lacking := gg.missing(bin_dir):
        skip_or_fail(f"the gang gate is not built: missing {', '.join(lacking)}; build it with `bash tools/build.sh`")
    env.cluster.apply([POD_GROUP_CRD])
    wait_established(env.cluster, POD_GROUP_CRD["metadata"]["name"])
    g = gg.GangGate(tmp_path_factory.mktemp("gang-gate"), env.cluster.kubeconfig, bin_dir, env.settings).start()
    env.gate = g
    try:
        yield g
    finally:
        env.gate = None
        g.stop()


def _gang(env: Env, name: str, size: int, min_member: int) -> list[str]:
    """PodGroup `name` and `size` gated pods, each claiming all 8 GPUs of an H100 node; the pods' names."""
    pods = [gg.gang_pod(f"{name}-{i}", name, pool="h100", product=product(H100), count=8, tolerate=TOLERATE)
            for i in range(size)]
    env.cluster.apply([gg.pod_group(name, min_member)] + [o for pod in pods for o in pod])
    return [pod[-1]["metadata"]["name"] for pod in pods]


def _drop_gang(env: Env, name: str, pods: list[str]) -> None:
    env.delete_jobs(*pods)
    env.kubectl("delete", "podgroups.scheduling.run.ai", name, "-n", "default", "--ignore-not-found")


def test_a_gang_the_pool_cannot_hold_launches_no_node_and_says_why(env: Env, gate: gg.GangGate) -> None:
    assert not env.node_claims()
    pods = _gang(env, "big", size=3, min_member=3)
    try:
        events = env.wait("the gate's GangWaitsForCapacity event on big-0", lambda: [
            m for r, m in gg.gate_events(env.kubectl, "big-0") if r == "GangWaitsForCapacity"], timeout=60)
        assert "gang default/big (minMember 3) needs 3 new nodes of pool h100 (8 GPUs each)" in events[-1], events
        assert "the pool can add 2 (limits.nodes 2, 0 NodeClaims)" in events[-1], events
        # Every pod was told, and none is released: Karpenter never sees them (reason SchedulingGated).
        for pod in pods[1:]:
            assert any(r == "GangWaitsForCapacity" for r, _ in gg.gate_events(env.kubectl, pod)), pod
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert env.node_claims() == [], env.debug()
            current = {p["metadata"]["name"]: p for p in env.items("pods", "-n", "default")}
            assert all(gg.gated(current[p]) for p in pods), env.debug()
            time.sleep(1)
        gate.check_alive()
    finally:
        _drop_gang(env, "big", pods)
    env.wait_no_gpu_nodes()


def test_a_gang_the_pool_can_hold_is_released_together_and_runs(env: Env, gate: gg.GangGate) -> None:
    assert not env.node_claims()
    pods = _gang(env, "pair", size=2, min_member=2)
    try:
        running = env.wait("both pods of gang pair running", lambda: env._running(pods))
        claims = env.node_claims()
        assert len(claims) == 2 and {c["metadata"]["labels"][NODEPOOL_LABEL] for c in claims} == {"h100"}
        assert len({p["spec"]["nodeName"] for p in running.values()}) == 2
        for pod in pods:
            released = [m for r, m in gg.gate_events(env.kubectl, pod) if r == "GangReleased"]
            assert released == ["gang default/pair: 2 pods fit: 2 new nodes of pool h100, 0 on existing nodes"], \
                gg.gate_events(env.kubectl, pod)
        gate.check_alive()
    finally:
        _drop_gang(env, "pair", pods)
    env.wait_no_gpu_nodes()


def _ec2_shaped(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The offline plan's objects with the ids its mocks invented (`<resource name>-<hex>`) in the
    shape EC2 gives them, which the CRD's patterns require (subnet-..., sg-...); nothing else changed."""
    out = json.loads(json.dumps(objs))
    for o in out:
        spec = o["spec"]
        for key, prefix in (("subnetSelectorTerms", "subnet"), ("securityGroupSelectorTerms", "sg")):
            for i, term in enumerate(spec.get(key, [])):
                if "id" in term and not term["id"].startswith(f"{prefix}-"):
                    term["id"] = f"{prefix}-0{i}{'0' * 15}"
    return out


def test_the_aws_stacks_objects_pass_the_pinned_crds_rules(env: Env) -> None:
    # What `ck8s-gpu plan --stack aws-elastic` renders for Karpenter, and an existing cluster's class
    # from its settings, judged by a real API server with the CRDs at the pin: OpenAPI schemas and
    # every CEL rule (EC2NodeClass: exactly one of role and instanceProfile, no reserved tag keys,
    # network interfaces, selector terms; NodePool: limits, budgets, requirements). A dry run:
    # nothing is created.
    plan = plan_stack("aws-elastic")
    values = next(r.inputs["values"] for r in plan.resources if r.name.endswith("-karpenter-nodepools"))
    objs = _ec2_shaped(values["nodeClasses"]) + values["nodePools"]
    assert sorted(o["metadata"]["name"] for o in objs) == ["h100", "h100", "l4", "l4"]
    for o in objs:  # beside this module's own NodePools of the same names (nodeClassRef is immutable)
        o["metadata"]["name"] = f"aws-{o['metadata']['name']}"
    # An existing cluster on AWS: its class is the user's `existingAws` fields (every selector kind).
    existing = parse_settings({"platform": "existing", "environment": "lab", "region": "eu-north-1", "existingAws": {
        "clusterEndpoint": "https://10.0.0.10:6443", "nodeRoleArn": "arn:aws:iam::123456789012:role/gpu-node",
        "instanceProfile": "gpu-node",
        "amiSelectorTerms": [{"ssmParameter": "/site/images/gpu"}, {"id": "ami-0123456789abcdef0"},
                             {"tags": {"site/image": "gpu"}}],
        "subnetSelectorTerms": [{"tags": {"site/tier": "private"}}, {"id": "subnet-0123456789abcdef0"}],
        "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}, {"tags": {"site/role": "node"}}],
        "userData": "#!/bin/bash\n/opt/site/join.sh\n", "tags": {"team": "ml"}},
        "nodePools": [{"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 3}}]})
    site = existing_node_class_manifest(existing, existing.node_pools[0])
    site["metadata"]["name"] = "existing-l4"
    out = env.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=ck8s-gpu-test", "-f", "-",
                      input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [*objs, site]}))
    assert out.count("serverside-applied (server dry run)") == 5, out


def test_karpenter_logged_no_error_about_our_objects(env: Env) -> None:
    bad = [line for line in env.karpenter.log.read_text(errors="replace").splitlines()
           if '"level":"ERROR"' in line and ("nodepool" in line.lower() or "nodeclass" in line.lower())]
    assert bad == [], "\n".join(bad[:5])


