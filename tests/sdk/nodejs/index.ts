// A Pulumi TypeScript program using the generated SDK of the ck8s-gpu provider: it must type-check
// against the SDK that `pulumi package gen-sdk --language nodejs` writes (tests/integration/test_provider_sdks.py).
import * as pulumi from "@pulumi/pulumi";
import * as ck8sgpu from "@ck8s-gpu/pulumi";

const config = new pulumi.Config();

const addons = new ck8sgpu.GpuAddons("gpu", {
    kubeconfig: config.requireSecret("kubeconfig"),
    pools: [{ name: "gpu", instanceType: "g6.xlarge", nodes: 2 }],
    driver: ck8sgpu.Driver.Operator,
    smokeTest: { gpus: 2, scheduler: ck8sgpu.Scheduler.Default },
});

const cluster = new ck8sgpu.GpuCluster("aws", {
    region: "us-east-1",
    pools: [{ name: "gpu", instanceType: "g6.xlarge", minNodes: 1, maxNodes: 3 }],
    controlPlanes: ck8sgpu.ControlPlaneCount.Three,
    tags: { team: "ml" },
});

export const installed: pulumi.Output<string[]> = addons.addons;
export const smokeReport: pulumi.Output<any> = addons.smokeReport;
export const kubeconfig: pulumi.Output<string> = cluster.kubeconfig;
