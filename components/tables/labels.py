"""Labels and tags the project puts on nodes and instances, and that other parts select on: the
keys are a contract between platforms, add-ons, the smoke test, day-2 tools and the policies, so
they live here once (pure; no imports).
"""

# The DRA kubelet plugin runs only on nodes carrying this label: the GPU Operator's driver manager
# removes it to evict the plugin before a driver upgrade (NVIDIA's documented "Pattern A").
DRA_NODE_LABEL = "nvidia.com/dra-kubelet-plugin"
# The GPU Operator's label for third-party GPU clients: under a ClusterPolicy it sets it true on every
# GPU node (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels), and its driver
# manager (before a driver reload: k8s-driver-manager v0.12.0 evictAllGPUOperatorComponents) and its
# MIG manager (before a MIG change: mig-parted v0.15.0 pkg/mig/reconfigure shutdownKubernetesGPUClients)
# set it to paused-for-... and wait for every DaemonSet pod whose nodeSelector has the key to go.
# The MIG manager knows no other label; under a GPUCluster the operator removes it
# (devicePluginOnlyStateLabelKeys).
GPU_CLIENT_LABEL = "nvidia.com/gpu.deploy.client"
# The GPU Operator's MIG manager cuts a node's GPUs to the config this label names (mig-parted
# v0.15.0 state_manager.go migConfigLabelKey), and reports its progress in the state label
# (pending, rebooting, success, failed: pkg/mig/reconfigure/reconfigure.go). A pool with a MIG
# layout joins with it (components/facts/mig.py); unlabelled MIG-capable nodes get all-disabled
# from the operator (nodelabeling_controller.go).
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
# fake-gpu-operator assigns simulated GPUs by this label's value (its topology pool name).
SIMULATED_POOL_LABEL = "run.ai/simulated-gpu-node-pool"

# AWS tags on what this project made; nodes find their control planes by cluster + role (the join
# contract), and the pool tag's value is also the node label naming a GPU node's pool.
CLUSTER_TAG = "ck8s-gpu/cluster"
ROLE_TAG = "ck8s-gpu/role"
POOL_TAG = "ck8s-gpu/pool"
CONTROL_PLANE_ROLE = "control-plane"

# On nodes launched with EFA interfaces (components/facts/efa.py): the EFA device add-on runs only there.
EFA_NODE_LABEL = "ck8s-gpu/efa"

# The pod label naming a workload's KAI queue (KAI-Scheduler pkg/common/constants/constants.go
# DefaultQueueLabel): the scheduler, the smoke test, the metrics allowlist and the reports read it.
QUEUE_LABEL = "kai.scheduler/queue"

# The well-known node label of a node's instance type (k8s.io/api core/v1 well_known_labels.go
# LabelInstanceTypeStable), set by the cloud provider: pools, NodePools, charts' affinities and
# reports select on it.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

# Node labels naming a node's pool, on AWS and on simulated pools.
POOL_LABELS = (POOL_TAG, SIMULATED_POOL_LABEL)

# The inference gateway's listener takes routes only from namespaces carrying this label with the
# value `allowed` (components/addons/inference_gateway.py): a route from any other namespace is
# refused (NotAllowedByListeners), so no team can claim a path on the shared gateway by accident.
INFERENCE_ROUTES_LABEL = "ck8s-gpu/inference-routes"

# KWOK fakes the nodes carrying this annotation (value `fake`): kwokctl starts its controller with
# --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake (sigs.k8s.io/kwok v0.8.0
# pkg/kwokctl/runtime/kind/cluster_kwok_controller.go), and tools/localcluster.py and the Karpenter
# tier's nodes carry it. Such a node runs no container.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"

# The pod annotation naming a pod's KAI PodGroup (KAI-Scheduler pkg/common/constants/constants.go
# PodGroupAnnotationForPod): KAI's podgrouper sets it after the pod is created
# (pkg/podgrouper/pod_controller.go), the scheduler, the smoke test and the gang gate read it.
POD_GROUP_ANNOTATION = "pod-group-name"
# The scheduling gate a gang's pods are created with on autoscaled pools: the gang gate add-on
# (components/addons/gang_gate.py, tools/mod/ganggate) removes it from every pod of a gang at once,
# and only when the pools can hold the whole gang. Karpenter provisions only for pods whose
# PodScheduled condition is Unschedulable (a gated pod's is SchedulingGated), so it launches nothing
# for a gang the pools cannot hold whole.
GANG_GATE = "ck8s-gpu.io/gang"
