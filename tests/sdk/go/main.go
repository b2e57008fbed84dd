// A Pulumi Go program using the generated Go SDK of the ck8s-gpu provider: it must compile
// against the SDK that `pulumi package gen-sdk --language go` writes (tests/integration/test_provider_sdks.py).
package main

import (
	"ck8s-gpu.local/sdk/go/ck8sgpu"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		addons, err := ck8sgpu.NewGpuAddons(ctx, "gpu", &ck8sgpu.GpuAddonsArgs{
			Kubeconfig: cfg.RequireSecret("kubeconfig"),
			Pools:      []ck8sgpu.GpuPoolArgs{{Name: "gpu", InstanceType: "g6.xlarge", Nodes: ptr(2)}},
			Driver:     ptr(ck8sgpu.DriverOperator),
			SmokeTest:  &ck8sgpu.SmokeTestArgs{Gpus: ptr(2), Scheduler: ptr(ck8sgpu.SchedulerDefault)},
		})
		if err != nil {
			return err
		}
		cluster, err := ck8sgpu.NewGpuCluster(ctx, "aws", &ck8sgpu.GpuClusterArgs{
			Region:        "us-east-1",
			Pools:         []ck8sgpu.GpuPoolArgs{{Name: "gpu", InstanceType: "g6.xlarge"}},
			ControlPlanes: ptr(ck8sgpu.ControlPlaneCountThree),
		})
		if err != nil {
			return err
		}
		ctx.Export("addons", addons.Addons)
		ctx.Export("smokeReport", addons.SmokeReport)
		ctx.Export("kubeconfig", cluster.Kubeconfig)
		return nil
	})
}

func ptr[T any](v T) *T { return &v }
