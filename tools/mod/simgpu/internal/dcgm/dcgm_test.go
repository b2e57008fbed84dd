package dcgm

import (
	"strings"
	"testing"

	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

var table = gputable.Table{
	GPUs: []gputable.GPU{
		{Index: 0, Minor: 0, UUID: "GPU-a", ProductName: "NVIDIA H100 80GB HBM3", MemoryMiB: 80000},
		{Index: 1, Minor: 1, UUID: "GPU-b", ProductName: "NVIDIA H100 80GB HBM3", MemoryMiB: 80000},
	},
	MIG: []gputable.MIG{
		{ParentMinor: 1, UUID: "MIG-1", Profile: "3g.40gb", GI: 1, MemorySlices: 4},
		{ParentMinor: 1, UUID: "MIG-2", Profile: "1g.10gb", GI: 2, MemorySlices: 1},
	},
}

func lines(out, prefix string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix+"{") {
			got = append(got, l)
		}
	}
	return got
}

func TestAWholeGPUAndTheInstancesOfAMIGGPUAreTheEntities(t *testing.T) {
	var keys []string
	for _, e := range Entities(table) {
		keys = append(keys, e.Key())
	}
	if strings.Join(keys, ",") != "GPU-a,MIG-1,MIG-2" {
		t.Errorf("entities %v: GPU-b is in MIG mode, watched as its instances only", keys)
	}
}

func TestAnIdleUnheldGPUHasOneSeriesWithoutPodLabels(t *testing.T) {
	out := Render("node-a", "580.95.05", table, nil)
	got := lines(out, "DCGM_FI_DEV_GPU_UTIL")
	want := `DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pci_bus_id="00000000:01:00.0",device="nvidia0",` +
		`modelName="NVIDIA H100 80GB HBM3",hostname="node-a",DCGM_FI_DRIVER_VERSION="580.95.05"} 0`
	if len(got) != 1 || got[0] != want {
		t.Errorf("GPU_UTIL series %q, want only %q (none for the GPU instances)", got, want)
	}
	if !strings.Contains(out, "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.\n"+
		"# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n") {
		t.Error("help and type lines missing")
	}
}

func TestAHeldDeviceIsRepeatedPerHolderWithItsDRAAttributes(t *testing.T) {
	holders := map[string][]Holder{
		"MIG-1": {{Pod: "p", Namespace: "ns", Container: "c", ClaimName: "cl", ClaimNamespace: "ns",
			Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-1-mig-3g40gb-9-4", Activity: 0.5}},
		"GPU-a": {
			{Pod: "x", Namespace: "ns", Container: "c1", Device: "gpu-0", Activity: 0.75},
			{Pod: "x", Namespace: "ns", Container: "c2", Device: "gpu-0", Activity: 0.75},
		},
	}
	out := Render("node-a", "580.95.05", table, holders)
	gr := lines(out, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
	if len(gr) != 4 { // GPU-a twice (two containers), MIG-1 once held, MIG-2 once unheld
		t.Fatalf("%d series: %q", len(gr), gr)
	}
	mig := `DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-b",pci_bus_id="00000000:02:00.0",device="nvidia1",` +
		`modelName="NVIDIA H100 80GB HBM3",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",hostname="node-a",` +
		`DCGM_FI_DRIVER_VERSION="580.95.05",container="c",dra_claim_name="cl",dra_claim_namespace="ns",` +
		`dra_device_name="gpu-1-mig-3g40gb-9-4",dra_driver_name="gpu.nvidia.com",dra_mig_device_uuid="MIG-1",` +
		`dra_mig_profile="3g.40gb",dra_pool_name="node-a",namespace="ns",pod="p"} 0.500000`
	found := false
	for _, l := range gr {
		found = found || l == mig
	}
	if !found {
		t.Errorf("no series %q in %q", mig, gr)
	}
	// Two holders of one GPU add up, capped at the whole device.
	if !strings.Contains(out, `pod="x"} 1.000000`) {
		t.Errorf("GPU-a's activity should be capped at 1: %q", gr)
	}
	if fb := lines(out, "DCGM_FI_DEV_FB_USED"); !strings.Contains(strings.Join(fb, "\n"), `pod="p"} 20000`) {
		t.Errorf("a half-busy 3g.40gb holds half of its 4/8 of 80000 MiB: %q", fb)
	}
}
