"""What to look at next when a smoke check fails: one line per check, printed under the failure.

`{ns}` is the smoke namespace. The commands read the objects the check judged; docs/architecture.md
walks the same hops in order.
"""

from __future__ import annotations

NEXT_STEP: dict[str, str] = {
    "device-class": "kubectl get deviceclass -o yaml: the DRA driver's release creates gpu.nvidia.com; "
                    "is dra-driver-nvidia-gpu deployed and its resourceApiVersion the cluster's?",
    "resource-slices": "kubectl get resourceslices -o wide: the DRA kubelet plugin on each GPU node publishes "
                       "them; read its logs, and nvidia-smi on a node that advertises too few GPUs",
    "claims-allocated": "kubectl -n {ns} describe resourceclaims: unallocated claims name the reason; "
                        "smokeTest.productNamePattern/minMemoryGiB must match what the driver publishes",
    "scheduler": "kubectl -n {ns} describe pods: the scheduler's events; under KAI the queue must be a leaf "
                 "with GPU quota (kubectl get queues)",
    "claim-node": "kubectl -n {ns} get resourceclaims,pods -o wide: a pod ran on another node than its "
                  "allocated device: a scheduler or DRA driver bug worth a report",
    "pods-started": "kubectl -n {ns} describe pods (events FailedPrepareDynamicResources, ErrImagePull, "
                    "CreateContainerError) and the DRA kubelet plugin's log on that node: is it registered "
                    "(kubelet plugins_registry) and does its CDI spec load?",
    "container-device": "kubectl -n {ns} describe pods and the kubelet log: NodePrepareResources writes the "
                        "CDI spec (/var/run/cdi) that containerd injects into the container",
    "distinct-gpus": "two pods hold one GPU: a device plugin and the DRA driver both advertise the node's GPUs "
                     "(one advertiser per node), or a claim was shared by mistake",
    "jobs-complete": "kubectl -n {ns} logs -l ck8s-gpu.io/smoke-run --all-containers: the probe says what it saw",
    "claims-released": "kubectl -n {ns} get resourceclaims -o yaml: a claim still allocated after its pods finished "
                       "keeps its GPU from every other workload (a scheduler that allocates without the "
                       "resource.kubernetes.io/delete-protection finalizer: docs/adr/0027)",
    "case-shared-claim": "kubectl -n {ns} logs the shared pod's two containers: both must list the same GPU",
    "case-named-claim": "kubectl -n {ns} get resourceclaim -o yaml: the named claim must be allocated once "
                               "and reserved for both pods",
    "case-gang": "kubectl -n {ns} get podgroups -o yaml: KAI starts all members together or none",
    "case-mig": "kubectl get resourceslices -o yaml | grep profile: MIG devices must be published for the "
                "profile asked (smokeTest.migProfile)",
    "gpu-sharing": "the DRA driver needs its TimeSlicingSettings/MPSSupport feature gate for shared-claim "
                   "GpuConfig; read the kubelet plugin's log",
    "case-all-reduce": "kubectl -n {ns} logs <all-reduce pod of index 0>: ranks (every pod started, sshd reached), "
                       "nccl network (Using network / NET/OFI Selected provider lines; the pods' "
                       "vpc.amazonaws.com/efa), bus bandwidth (smokeTest.allReduce.minBusBandwidthGBps)",
    "case-compute-domain": "kubectl -n {ns} get computedomains -o yaml (status.nodes: which IMEX daemon never "
                           "joined), kubectl get resourceslices -o yaml | grep compute-domain.nvidia.com; a channel "
                           "seen nowhere in a container: the compute-domain kubelet plugin's log",
    "case-first-available": "kubectl get resourceslices -o json | jq '.items[].spec.devices[].attributes.productName': "
                            "a fallback on the preferred pool means its GPUs publish another productName than "
                            "the instance type's; kubectl -n {ns} get resourceclaims -o yaml (results[].request)",
    "case-nvlink-group": "kubectl get resourceslices -o yaml | grep partition: the driver publishes "
                         "gpu.nvidia.com/partition<N> only with FabricManagerPartitioning and Fabric Manager in "
                         "FABRIC_MODE=1; a prepare refusal is in the DRA kubelet plugin's log",
    "case-gpu-health": "kubectl get resourceslices -o json | jq '.items[].spec.devices[] | select(.taints)': a "
                       "tainted device went to a claim (DRADeviceTaints off on the scheduler?) or turned unhealthy "
                       "while held (the node's GPU: nvidia-smi -q, dmesg for the XID)",
    "case-inference-route": "kubectl -n inference-gateway get gateway inference -o yaml and kubectl -n {ns} get "
                            "httproutes -o yaml (status.parents[].conditions: BackendNotFound, "
                            "NotAllowedByListeners); the namespace needs the label ck8s-gpu/inference-routes=allowed",
    "case-inference-replicas": "kubectl -n {ns} get pods,resourceclaims -l ck8s-gpu.io/smoke-case=inference -o wide; "
                               "kubectl -n {ns} logs <replica> (CK8S-MODEL gpus/no-gpu: what nvidia-smi listed inside)",
    "case-inference-split": "kubectl -n {ns} get httproutes -o yaml (backendRefs[].weight); the gateway's own log "
                            "(kubectl -n inference-gateway logs deploy/traefik) for the failed requests",
    "case-inference-header": "kubectl -n {ns} get httproutes -o yaml: the header match must be Exact on "
                             "X-Gateway-Model-Name with the canary's model name",
    "case-inference-metrics": "kubectl -n {ns} describe hpa and scaledobjects (TriggerError: the query's series); "
                              "the PodMonitor's targets in Prometheus (Status > Targets) and KEDA's operator log",
    "case-inference-autoscale": "kubectl -n {ns} describe hpa (desiredReplicas, conditions, events); pending new "
                                "replicas: kubectl -n {ns} describe pods (no free GPU for their claims?)",
    "dcgm-metrics": "kubectl -n gpu-operator get pods,svc -l app=nvidia-dcgm-exporter; its /metrics on port 9400",
}
RERUN = ("Then `pulumi up` again: a failed run is not recorded, so it runs again "
         "(smokeTest.trigger forces a run when nothing else changed).")


def next_steps(failed_checks: list[str], namespace: str) -> list[str]:
    """The 'Next:' lines for the failed checks, in their order (a generic one for an unknown check)."""
    lines = []
    for check in failed_checks:
        hint = NEXT_STEP.get(check, "the check's problems above name the objects to read")
        lines.append(f"  {check}: {hint.format(ns=namespace)}")
    return ["Next:", *lines, RERUN] if lines else []
