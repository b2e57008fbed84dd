// Command ck8s-karpenter-kwok runs Karpenter's core controllers (sigs.k8s.io/karpenter at the pin)
// with its KWOK cloud provider: NodeClaims become KWOK nodes on the local control plane instead of
// EC2 instances. The one change from upstream's kwok/main.go: before the provider is built, every
// instance type gets the DRA devices the AWS provider at the same release models for it
// (github.com/aws/karpenter-provider-aws pkg/providers/nvidiadra: one "gpu-<i>" device per GPU of
// driver gpu.nvidia.com with the scraped productName, architecture, memory, ...). So the
// scheduling simulation that decides a scale-up is the one production runs on aws, and the CI
// scenarios (tests/integration/test_karpenter_local.py) prove it against our simulated slices.
//
// Instance types come from INSTANCE_TYPES_FILE_PATH (kwok/options), written by
// tools/karpenter_sim.py from components/tables/instance_types.py.
package main

import (
	"os"

	"github.com/aws/karpenter-provider-aws/pkg/providers/nvidiadra"
	"github.com/samber/lo"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

func main() {
	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
		os.Exit(1)
	}
	// nil mode: whole GPUs, as an EC2NodeClass without the consumable-capacity annotation.
	templates := nvidiadra.NewDefaultProvider().ResolveDynamicResources(ctx, instanceTypes, nil)
	var unmodeled []string
	for _, it := range instanceTypes {
		if dr, ok := templates[it.Name]; ok {
			it.DynamicResources = dr
		} else {
			unmodeled = append(unmodeled, it.Name)
		}
	}
	// One line the CI reads (tests/integration/test_karpenter_local.py): which of the given types a GPU
	// claim can never launch, held against components/tables/instance_types.py AUTOSCALER_UNMODELED.
	log.FromContext(ctx).Info("ck8s-gpu instance types", "count", len(instanceTypes),
		"withGPUTemplates", len(templates), "withoutGPUTemplates", unmodeled)

	undecorated := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	cloudProvider := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	repairPolicies := lo.Must(health.NewRepairPolicyMatcher(ctx, cloudProvider))
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider, state.WithRepairPolicyMatcher(repairPolicies))
	op.WithControllers(ctx, controllers.NewControllers(
		ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder, cloudProvider, undecorated,
		clusterState, op.InstanceTypeStore, op.PredictionStore,
	)...).Start(ctx)
}
