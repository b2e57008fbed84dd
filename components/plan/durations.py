"""Step durations for the time-to-first-GPU-job timeline: ONE table, every row with its source.

Each row is (low, high) seconds of wall time and a `source` saying what the range rests on:

- `https://...: <statement>` — an upstream document, issue or published log, and what it says;
  several sources are separated by ` | `.
- `measured: <where>` — our own measurement (docs/benchmarks.md).
- `code: <path>` — a wait our own code sets (poll intervals, health-check settings).
- `zero: <reason>` — no wall time worth modelling (computed locally, configuration only).
- `estimate: <reasoning>` — no source found; the row says so (`kind == "estimate"`) and
  `ck8s-gpu plan --timeline` lists it. Keep these few.

Ranges are per step on one node; steps that run on several nodes at once (a pool's instances
boot in parallel) are one step. Which planned resource maps to which row is decided in
`components/plan/timeline.py` (`step_key`) and by the synthetic node steps it adds.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE_PREFIXES = ("https://", "measured:", "code:", "zero:", "estimate:")


@dataclass(frozen=True)
class Duration:
    low: float
    high: float
    label: str  # what the step is, for tables and the gantt chart
    source: str

    @property
    def kind(self) -> str:
        """upstream | measured | code | zero | estimate (a row with any estimate in it is an estimate)."""
        if "estimate:" in self.source:
            return "estimate"
        for prefix, kind in (("measured:", "measured"), ("code:", "code"), ("zero:", "zero")):
            if self.source.startswith(prefix):
                return kind
        return "upstream"


_TF_NET = "https://github.com/bshehram/devops-aws-tf/blob/main/SAMPLE_TF_APPLY.md"
_TF_EKS = "https://github.com/ignvb/devsu-devops-assessment/blob/main/IaC/Apply_output.md"
_EC2_BENCH = ("https://www.daemonology.net/blog/2021-08-12-EC2-boot-time-benchmarking.html: RunInstances API "
              "call 1.5 s, pending to running 4.9 s, running to sshd 22.8 s (c5.xlarge)")
_EC2_COLD = ("https://github.com/brevdev/ec2-coldboot-research/blob/main/%40fix_plan.md: launch to SSH 22.6-25.8 s, "
             "pending to running 16.4-16.6 s whatever the instance family")
_GPU_STACK = ("https://github.com/NVIDIA/gpu-operator/issues/413 (maintainer): 'With driver containers, it takes "
              "about 3-4 minutes to setup/load drivers and toolkit' | https://github.com/canonical/k8s-snap/blob/main/"
              "tests/integration/tests/test_nvidia_gpu_operator.py: 'a little under 10 minutes for all of the core "
              "daemonsets' (driver, toolkit, device plugin) on a fresh g4dn.xlarge")
_HELM = (f"{_TF_EKS}: helm_release creation complete after 48 s, 1m42s and 1m45s on fresh EKS nodes (image pulls "
         "included)")
_LOCAL = ("measured: docs/benchmarks.md, real-engine tier (local stack): `pulumi up` start to smoke pass "
          "5.4-7.0 s (three runs) for namespace + smoke chart + smoke run, the run itself 2.4-2.5 s")

# A pod whose image is on the node: what the preloaded rows below add their own waits to. Low: the
# local-kubelet tier's bare pod (CNI bridge, no init containers, no volumes); high: the SLO's p99,
# which counts what a real pod has that the bare one lacks.
_POD_START = Duration(0.2, 5, "pod start with its image on the node (no pull)",
                      "measured: docs/benchmarks.md 'Pod start: preloaded vs pulled (local-kubelet tier)', pod "
                      "ADDED to phase Running 0.21-1.25 s over 10 runs (preloaded, 4.7 MB and 214 MB images) | "
                      "https://github.com/kubernetes/community/blob/main/sig-scalability/slos/"
                      "pod_startup_latency.md: 'excluding time to pull images and run init containers' the 99th "
                      "percentile per cluster-day is <= 5s")
_PROBE_PERIOD = 10  # Kubernetes' default periodSeconds, and what the charts below set
# The validator DaemonSet gates ClusterPolicy ready: init containers driver-, toolkit-, cuda- and
# plugin-validation in sequence (assets/state-operator-validation/0500_daemonset.yaml), the cuda one
# creating a pod and polling it every 5 s (cmd/nvidia-validator/main.go waitForPod,
# podCreationSleepIntervalSeconds), all at NVIDIA/gpu-operator v26.7.0.
_VALIDATION = Duration(
    2 * _POD_START.low, 2 * _POD_START.high + 4 * _POD_START.high + 5,
    "GPU Operator validator (driver, toolkit, CUDA validation; images side-loaded)",
    "code: NVIDIA/gpu-operator v26.7.0 assets/state-operator-validation/0500_daemonset.yaml (four init "
    "containers in sequence), cmd/nvidia-validator/main.go (the CUDA validation pod, polled every 5 s): two "
    "pod starts, four init-container starts bounded like pod starts, one poll interval")

DURATIONS: dict[str, Duration] = {
    # ---- AWS API objects (pulumi-aws returns when AWS reports them available)
    "aws-vpc": Duration(5, 14, "VPC", f"{_TF_NET}: aws_vpc complete after 12 s (3 VPCs) | {_TF_EKS}: 14 s"),
    "aws-subnet": Duration(0, 11, "subnet", f"{_TF_NET}: 36 aws_subnet complete after 0-11 s"),
    "aws-route": Duration(0, 2, "route table / route", f"{_TF_NET}: aws_route, aws_route_table and "
                                                      "aws_route_table_association complete after 0-2 s"),
    "aws-igw": Duration(0, 2, "internet gateway", f"{_TF_NET}: aws_internet_gateway complete after 0-1 s | "
                                                  f"{_TF_EKS}: 1 s"),
    "aws-eip": Duration(0, 1, "elastic IP", f"{_TF_NET}: 12 aws_eip complete after 0-1 s"),
    "aws-nat": Duration(84, 124, "NAT gateway available", f"{_TF_NET}: 12 aws_nat_gateway complete after 1m24s-2m4s | "
                                                          f"{_TF_EKS}: 1m47s"),
    "aws-sg": Duration(1, 3, "security group", f"{_TF_EKS}: aws_security_group complete after 3 s | {_TF_NET}: "
                                               "aws_default_security_group 1-2 s"),
    "aws-sg-rule": Duration(1, 8, "security group rule", f"{_TF_EKS}: 11 aws_security_group_rule complete after 1-8 s"),
    "aws-iam": Duration(0, 2, "IAM role / policy / profile", f"{_TF_EKS}: aws_iam_role 0-2 s, aws_iam_policy 1-2 s, "
                                                             "aws_iam_role_policy_attachment 0-1 s"),
    "aws-launch-template": Duration(0, 2, "launch template", f"{_TF_EKS}: aws_launch_template complete after 2 s"),
    "aws-kms-key": Duration(10, 30, "KMS key", f"{_TF_EKS}: aws_kms_key complete after 20 s (one sample; "
                                               "estimate: +-10 s around it)"),
    "aws-api": Duration(0, 5, "AWS API object", f"{_EC2_BENCH} | {_TF_EKS}: plain API objects (IAM, KMS alias, "
                                                "log group, routes) complete after 0-2 s"),
    "aws-nlb": Duration(120, 180, "network load balancer active",
                        "https://github.com/DataBiosphere/azul/pull/5780: aws_lb 'Creation complete after 2m54s' | "
                        "https://github.com/hashicorp/terraform-provider-aws/issues/1838: NLB creation 'wait more "
                        "than 2 mins'"),
    "aws-ec2-running": Duration(6, 25, "EC2 launch to running", f"{_EC2_BENCH} | {_EC2_COLD}"),
    "aws-asg-capacity": Duration(6, 30, "Auto Scaling group: instance launched to running (wait for capacity)",
                                 f"{_EC2_BENCH} | {_EC2_COLD} | code: components/aws/node_pool.py waits for "
                                 "capacity (EC2 health checks: InService once running)"),
    "karpenter-launch": Duration(1, 15, "Karpenter: pending pods batched, a NodeClaim launched (CreateFleet)",
                                 "code: aws/karpenter-provider-aws v1.15.0 charts/karpenter/values.yaml "
                                 "settings.batchIdleDuration 1s, batchMaxDuration 10s (the window that gathers "
                                 "pending pods) | " + _EC2_BENCH + " (the API call that launches)"),
    "nlb-target-registration": Duration(70, 280, "NLB registers the target (before health checks start)",
                                        "https://github.com/aws/containers-roadmap/issues/469: targets 'sit idle in "
                                        "the NLB target group with state initial for 70-120 seconds before the first "
                                        "health check' | https://github.com/kubernetes-sigs/aws-load-balancer-"
                                        "controller/issues/1786 (AWS): 'new targets will take 4~5mins to be ready "
                                        "when registered into a NLB's targetGroup'"),
    "nlb-health-checks": Duration(20, 20, "NLB health checks pass (2 x 10 s)",
                                  "code: components/aws/load_balancer.py (TCP 6443, interval 10 s, healthy "
                                  "threshold 2)"),
    # ---- a node's first boot (cloud-init runs components/aws/scripts/ck8s-node.sh)
    "node-boot": Duration(20, 100, "boot to cloud-init final stage",
                          f"{_EC2_BENCH} | https://www.admin-magazine.com/Articles/Comparing-startup-times-of-Linux-"
                          "distros-in-the-cloud: 'one to two minutes being a reasonable expectation of first "
                          "availability' of Linux instances on EC2"),
    "snap-install": Duration(15, 90, "snap install k8s (+ aws-cli)",
                             "https://github.com/canonical/k8s-snap/issues/1789: CI log, `snap install k8s "
                             "--channel 1.32-classic/stable` 15.3 s | estimate: upper bound for snapd seeding on "
                             "first boot plus the aws-cli snap (the script waits `snap wait system seed.loaded`)"),
    "k8s-bootstrap": Duration(12, 90, "k8s bootstrap",
                              "https://github.com/canonical/k8s-snap/blob/main/tests/integration/tests/performance/"
                              "baselines/ubuntu-24.04-amd64.json: `k8s bootstrap` 13.3-16.0 s over 20 rounds "
                              "(22.04: 11.7-13.6 s) | https://github.com/canonical/cluster-api-k8s/issues/163: "
                              "bootstrap hit the CLI's 1m30s timeout on slow hardware"),
    "k8s-join-control-plane": Duration(12, 90, "k8s join-cluster (control plane)",
                                       "https://github.com/canonical/k8s-snap/blob/main/tests/integration/tests/"
                                       "performance/baselines/ubuntu-24.04-amd64.json: bootstrap 13.3-16.0 s, a join "
                                       "does the same work | https://github.com/canonical/cluster-api-k8s/blob/main/"
                                       "pkg/cloudinit/scripts/join-cluster.sh: CAPI joins within the CLI's default "
                                       "1m30s timeout (cluster-api-k8s#163)"),
    "k8s-join-worker": Duration(14, 150, "join token via SSM + k8s join-cluster (worker)",
                                "code: components/aws/scripts/ck8s-node.sh (SSM invocation polled every 2 s, at most "
                                "30 polls) | https://github.com/canonical/k8s-snap/blob/main/tests/integration/tests/"
                                "performance/baselines/ubuntu-24.04-amd64.json: the join itself 12-16 s, "
                                "https://github.com/canonical/cluster-api-k8s/issues/163: within the CLI's 90 s"),
    "node-ready-cni": Duration(5, 105, "node Ready (Cilium up)",
                               "https://github.com/canonical/k8s-snap/issues/1789: `k8s status --wait-ready` answered "
                               "5 s after bootstrap | https://github.com/cilium/cilium/issues/23978: `cilium status "
                               "--wait` 1m42s until every agent and the operator are ready"),
    # ---- a node whose image carries the snap and every image (docs/adr/0043; the user-data says so:
    # CK8S_SNAP_SOURCE=image, CK8S_IMAGES_PRELOADED=1, read by components/plan/timeline.py)
    "snap-install-local": Duration(3, 30, "snap ack + snap install of core22, k8s and aws-cli from the image's disk",
                                   "estimate: no download (k8s-snap release-1.34 docs/canonicalk8s/snap/howto/"
                                   "install/offline.md: `snap ack k8s.assert && snap install ./k8s.snap "
                                   "--classic`; components/images/snap_steps.py puts the files on the image); "
                                   "k8s-snap#1789's store install took 15.3 s WITH its download, so 3-30 s allows "
                                   "twice that for three local installs and the first read of their blocks from "
                                   "the AMI's snapshot (https://docs.aws.amazon.com/ebs/latest/userguide/"
                                   "ebs-initialize.html: blocks of a volume created from a snapshot are fetched "
                                   "from S3 at first access, with a significant increase in latency) | code: "
                                   "canonical/snapd 2.77 (ff6da80) overlord/devicestate/firstboot.go refuses to "
                                   "seed a system already seeded: an image built on a booted instance is seeded, "
                                   "so the script's `snap wait system seed.loaded` returns at once"),
    "containerd-sideload": Duration(10, 120, "containerd imports the image's tarballs at its first start",
                                    "estimate: k8s-snap release-1.34 (f7e1b7c) build-scripts/components/"
                                    "containerd/patches/default/0001-side-load-images-plugin.patch: once "
                                    "containerd starts (k8sd starts it in its bootstrap and join hooks: "
                                    "src/k8s/pkg/snap/util/services.go, src/k8s/pkg/k8sd/app/cluster_util.go), "
                                    "a goroutine beside the CRI imports "
                                    "every *.tar of /var/snap/k8s/common/images, one file after another "
                                    "(client Import: each tarball read once, its blobs written to the content "
                                    "store); for the few GB of the stack's images (components/addons/image_catalog.py) "
                                    "at gp3's 125 MiB/s baseline (components/aws/hardening.py: gp3 root; "
                                    "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html) that "
                                    "is tens of seconds; the upper bound doubles it for the snapshot's first-read "
                                    "latency (https://docs.aws.amazon.com/ebs/latest/userguide/ebs-initialize.html)"
                                    ". The model lets a node's pods wait for the whole import: a pod that asks "
                                    "first would pull (online) or back off (offline)"),
    "pod-start-preloaded": _POD_START,
    # ---- NVIDIA GPU Operator on a fresh GPU node
    "gpu-driver-compiled": Duration(150, 480, "driver container (compiled on the node)",
                                    f"{_GPU_STACK}: driver + toolkit 180-540 s, less the toolkit row"),
    "gpu-driver-precompiled": Duration(50, 380, "driver container (precompiled)",
                                       "https://github.com/Azure/AgentBaker/pull/8661: 'the ~100s ... NVIDIA DKMS "
                                       "kernel-module compile' is what prebuilt modules take off node provisioning "
                                       "| https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/"
                                       "precompiled-drivers.html: no kernel headers, compiler or OS packages to "
                                       "fetch: the compiled row less ~100 s"),
    "gpu-driver-host": Duration(0, 0, "host driver (no driver container)",
                                "zero: settings.gpuStack.driver=host sets driver.enabled=false; the validator only "
                                "checks the host's driver (components/addons/gpu_operator.py)"),
    "gpu-toolkit": Duration(30, 60, "container toolkit (containerd drop-in, restart)",
                            "https://github.com/NVIDIA/k8s-test-infra/issues/583: an operand DaemonSet rollout took "
                            "54.8 s after the operator re-rendered it | estimate: the toolkit's share of the 3-4 min "
                            "driver + toolkit total (NVIDIA/gpu-operator#413) is not published on its own"),
    "gpu-toolkit-host": Duration(0, 1, "container toolkit in the node image (nvidia-ctk before containerd starts)",
                                 "measured: nvidia-ctk v1.20.0 (built from NVIDIA/nvidia-container-toolkit tag "
                                 "v1.20.0) `runtime configure --config-source=file` on k8s-snap's root config took "
                                 "9 ms (docs/benchmarks.md, recorded once; docs/adr/0046); it runs as ExecStartPre "
                                 "of containerd's first start inside the join, so no pod, no pull and no containerd "
                                 "restart (components/aws/scripts/ck8s-node.sh host_toolkit)"),
    "gpu-operator-validation-preloaded": _VALIDATION,
    "gpu-operator-validation": Duration(
        _VALIDATION.low + 1, _VALIDATION.high + 60,
        "GPU Operator validator (driver, toolkit, CUDA validation; validator image pulled)",
        "code: the preloaded row's chain | estimate: plus one pull of the validator image (the gpu-operator "
        "image, which also runs the CUDA validation pod), at most 60 s"),
    "dra-plugin-start": Duration(0, 15, "DRA kubelet plugin starts once the driver is there, publishes its GPUs",
                                 "code: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 hack/kubelet-plugin-prestart.sh "
                                 "(the init container retries nvidia-smi every 10 s) | estimate: plugin registration "
                                 "and the first ResourceSlice, a few seconds (not measured: no real plugin runs here)"),
    # ---- Helm releases (Helm waits for their workloads) and Kubernetes objects
    "helm-gpu-operator": Duration(30, 120, "GPU Operator release (operator + NFD ready)",
                                  "https://github.com/red-hat-data-services/ods-ci/pull/1108: deployment "
                                  "gpu-operator rolled out 19 s after the subscription was created | " + _HELM),
    "helm-kube-prometheus-stack": Duration(60, 300, "kube-prometheus-stack release",
                                           _HELM + " | https://github.com/llm-d/llm-d-autoscaling/pull/754: 'The "
                                           "install takes exactly 5 minutes (the current timeout) before failing' on "
                                           "a busy cluster"),
    "helm-remote": Duration(30, 120, "Helm release (images pulled, workloads ready)", _HELM),
    "helm-local": Duration(1, 5, "Helm release of a local chart", _LOCAL),
    "k8s-object": Duration(0, 3, "Kubernetes object", f"{_TF_EKS}: kubernetes_namespace complete after 3 s, "
                                                       "service account 1 s, secret 0 s"),
    # ---- preloaded variants: the rows above whose sourced ranges include image pulls, for a cluster
    # whose node images carry every image. Each is pod-start-preloaded plus the waits its workload
    # sets itself. No variant: gpu-toolkit (its 54.8 s source is a restart rollout, the image already
    # on the node) and dra-plugin-start (its range never counted a pull).
    "node-ready-cni-preloaded": Duration(5, _POD_START.high + 40, "node Ready (Cilium up, images side-loaded)",
                                         "https://github.com/canonical/k8s-snap/issues/1789: `k8s status "
                                         "--wait-ready` answered 5 s after bootstrap | estimate: cilium#23978's "
                                         "1m42s includes pulling the agent image, the pull https://github.com/"
                                         "canonical/k8s-snap/pull/1742 says the node's Ready waits for (cilium "
                                         "rock cut from 1.47 GB to 811 MB); without it: the agent's "
                                         "pod start plus its own bootstrap, of which one phase alone took up to "
                                         "15 s on fresh nodes (https://github.com/cilium/cilium/issues/34990, a "
                                         "400-node test): 40 s for agent and operator"),
    "helm-gpu-operator-preloaded": Duration(_POD_START.low + 5, _POD_START.high + 5 + 2 * _PROBE_PERIOD + 10,
                                            "GPU Operator release (operator + NFD ready, images side-loaded)",
                                            "https://github.com/NVIDIA/gpu-operator/blob/v26.7.0/deployments/"
                                            "gpu-operator/templates/operator.yaml: readinessProbe "
                                            "initialDelaySeconds 5, periodSeconds 10 (NFD 0.19.0, its "
                                            "dependency, charts/node-feature-discovery/values.yaml: worker "
                                            "readiness initialDelaySeconds 5, master at the default period) | "
                                            "estimate: pod start, the first probe and two retries, 10 s for Helm "
                                            "applying the chart and polling its workloads"),
    "helm-remote-preloaded": Duration(_POD_START.low + 4, _POD_START.high + 30 + 2 * _PROBE_PERIOD + 5,
                                      "Helm release (images side-loaded, workloads ready)",
                                      "estimate: helm-remote's 30-120 s on fresh EKS nodes includes the pulls and "
                                      "no pull-free number is published for these charts: pod start, a readiness "
                                      "probe's initial delay (assumed at most 30 s: not read for every chart) plus "
                                      "two retries at the default period, 5 s for Helm"),
    "helm-kube-prometheus-stack-preloaded": Duration(20, 180, "kube-prometheus-stack release (images side-loaded)",
                                                     "estimate: its pre-install admission-webhook Jobs, then the "
                                                     "operator, then Prometheus and Alertmanager from the "
                                                     "operator: several pod starts in sequence plus the "
                                                     "operator's reconcile; the pulled row's 300 s upper bound "
                                                     "is a busy cluster's timeout, 180 s keeps most of it"),
    "smoke-run-preloaded": Duration(5, 60, "smoke run (GPU job, verifier; images side-loaded)",
                                    "estimate: the smoke-run row's 180 s is k8s-snap's timeout for a pod that "
                                    "pulls the CUDA sample image; without the pull: pod start (the Jobs' pods in "
                                    "parallel), DRA allocation, the run itself (2.4-2.5 s on the local tier, "
                                    "docs/benchmarks.md) and the verifier's collect; 60 s is ten times their sum"),
    # ---- our dynamic resources
    "api-ready-poll": Duration(0, 15, "API readiness gate (poll)",
                               "code: components/k8s_ready.py (polls /readyz and Ready nodes; components/kube/wait.py "
                               "backs off 1, 2, 4, 8, 15 s)"),
    "wait-for-poll": Duration(0, 15, "readiness wait (poll)",
                              "code: components/k8s_wait.py (the same poll and back-off: components/kube/wait.py)"),
    "api-ready-existing": Duration(0, 1, "API readiness gate (cluster already up)", _LOCAL),
    "upgrade-noop": Duration(0, 1, "node upgrade gate (no-op on create)",
                             "code: components/upgrade/resources.py (create records state only: no node is touched)"),
    "dra-mode-guard": Duration(0, 0, "who-runs-DRA guard (inputs only)",
                               "zero: components/addons/dra_mode_guard.py (its check compares inputs; create "
                               "records them, no API call)"),
    "crds-first": Duration(1, 15, "chart CRDs applied before the release",
                           "code: components/addons/crds_first.py (one chart archive download, tens of KB, then "
                           "one server-side apply per CRD; Helm's own pull and the API server's PATCH)"),
    "smoke-run": Duration(5, 180, "smoke run (GPU job, verifier)",
                          _LOCAL + " (no image pull) | https://github.com/canonical/k8s-snap/blob/main/tests/"
                          "integration/tests/test_nvidia_gpu_operator.py: the cuda-vectoradd pod is given 180 s to "
                          "become ready"),
    "smoke-run-local": Duration(2, 3, "smoke run (simulated GPUs)", _LOCAL),
    "kind-create": Duration(60, 300, "kind create cluster --wait",
                            "estimate: components/kind/commands.py says ~1 min with the node image cached and waits "
                            "at most 5 min; docs/kind.md: not measured (no Docker in CI)"),
    # ---- reserved capacity
    "capacity-block-wait": Duration(0, 0, "wait for the pool's Capacity Block to start",
                                    "code: components/plan/timeline.py (its length is the block's startsAt less "
                                    "the start of `up`, per stack) | https://docs.aws.amazon.com/AWSEC2/latest/"
                                    "UserGuide/capacity-blocks-launch.html: instances launch into a Capacity Block "
                                    "only while it is active"),
    # ---- no wall time
    "local-compute": Duration(0, 0, "computed by the provider plugin",
                              "zero: tls/random resources are computed locally by their provider, no cloud call"),
    "provider": Duration(0, 0, "provider configuration", "zero: a provider is configuration; nothing is created"),
    "unmapped": Duration(0, 5, "resource type without a row",
                         "estimate: a type missing from components/plan/durations.py (tests keep committed stacks "
                         "free of it)"),
}


# Rows whose sourced range includes image pulls -> their variant on node images that carry every
# image (components/plan/timeline.py picks it when the nodes' user-data says CK8S_IMAGES_PRELOADED=1).
PRELOADED_VARIANTS: dict[str, str] = {
    "node-ready-cni": "node-ready-cni-preloaded",
    "helm-gpu-operator": "helm-gpu-operator-preloaded",
    "helm-remote": "helm-remote-preloaded",
    "helm-kube-prometheus-stack": "helm-kube-prometheus-stack-preloaded",
    "smoke-run": "smoke-run-preloaded",
    "gpu-operator-validation": "gpu-operator-validation-preloaded",
}


def table_problems(table: dict[str, Duration] | None = None) -> list[str]:
    """Rows without a source of a known kind, or with a bad range."""
    problems = []
    for key, d in (table or DURATIONS).items():
        if not d.source.startswith(SOURCE_PREFIXES):
            problems.append(f"{key}: source must start with one of {', '.join(SOURCE_PREFIXES)}")
        if d.kind == "upstream" and "https://" not in d.source:
            problems.append(f"{key}: an upstream source needs its URL")
        if not 0 <= d.low <= d.high:
            problems.append(f"{key}: range ({d.low}, {d.high}) is not 0 <= low <= high")
        if d.kind == "zero" and d.high > 0:
            problems.append(f"{key}: a zero row has high {d.high}")
    return problems
