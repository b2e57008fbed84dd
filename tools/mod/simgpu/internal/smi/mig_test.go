package smi

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

func capDev(minor uint32) DevInfo {
	return DevInfo{CharDev: true, Major: gputable.CapsMajor, Minor: minor}
}

// migTable: GPU minor 0 in MIG mode with three instances, GPU minor 1 whole.
func migTable(t *testing.T) (string, []gputable.MIG) {
	t.Helper()
	var migs []gputable.MIG
	for gi, profile := range []string{"1g.10gb", "1g.10gb", "3g.40gb"} {
		giMinor, ciMinor := gputable.CapMinors(0, gi+1, 0)
		migs = append(migs, gputable.MIG{ParentMinor: 0, UUID: fmt.Sprintf("MIG-%d", gi+1), Profile: profile,
			GI: gi + 1, GICapMinor: giMinor, CICapMinor: ciMinor})
	}
	tbl := gputable.Table{GPUs: []gputable.GPU{
		{Index: 0, Minor: 0, UUID: "GPU-aaaa", ProductName: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559},
		{Index: 1, Minor: 1, UUID: "GPU-bbbb", ProductName: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559},
	}, MIG: migs}
	p := filepath.Join(t.TempDir(), "gpus.json")
	if err := gputable.Write(p, tbl); err != nil {
		t.Fatal(err)
	}
	return p, migs
}

func capNodes(ms ...gputable.MIG) map[string]DevInfo {
	nodes := map[string]DevInfo{}
	for _, m := range ms {
		nodes[fmt.Sprintf("nvidia-caps/nvidia-cap%d", m.GICapMinor)] = capDev(m.GICapMinor)
		nodes[fmt.Sprintf("nvidia-caps/nvidia-cap%d", m.CICapMinor)] = capDev(m.CICapMinor)
	}
	return nodes
}

func TestAContainerGivenOneMIGDeviceListsItUnderItsGPU(t *testing.T) {
	path, migs := migTable(t)
	nodes := capNodes(migs[2])
	nodes["nvidiactl"], nodes["nvidia0"] = ctl, gpu(0)
	out, code := run(t, nodes, path, "-L")
	want := "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n" +
		"  MIG 3g.40gb     Device  0: (UUID: MIG-3)\n"
	if code != ExitOK || out != want {
		t.Errorf("nvidia-smi -L = %d %q, want %q", code, out, want)
	}
}

func TestAMIGDeviceNeedsBothCapabilityNodesAndItsGPU(t *testing.T) {
	path, migs := migTable(t)
	// Only the GI's node of MIG-1: not usable, so not listed; MIG-2 complete but no parent node.
	nodes := map[string]DevInfo{"nvidiactl": ctl, "nvidia1": gpu(1)}
	for k, v := range capNodes(migs[1]) {
		nodes[k] = v
	}
	nodes[fmt.Sprintf("nvidia-caps/nvidia-cap%d", migs[0].GICapMinor)] = capDev(migs[0].GICapMinor)
	// A node of another major under a cap name is not a capability.
	nodes[fmt.Sprintf("nvidia-caps/nvidia-cap%d", migs[0].CICapMinor)] = gpu(migs[0].CICapMinor)
	out, code := run(t, nodes, path, "-L")
	if code != ExitOK || strings.Contains(out, "MIG") || !strings.Contains(out, "GPU-bbbb") {
		t.Errorf("nvidia-smi -L = %d %q: no MIG device is complete, only GPU 1 is visible", code, out)
	}
}

func TestAllThreeInstancesCountFromZeroPerGPU(t *testing.T) {
	path, migs := migTable(t)
	nodes := capNodes(migs...)
	nodes["nvidiactl"], nodes["nvidia0"] = ctl, gpu(0)
	out, _ := run(t, nodes, path, "-L")
	for i, m := range migs {
		if line := fmt.Sprintf("Device %2d: (UUID: %s)", i, m.UUID); !strings.Contains(out, line) {
			t.Errorf("missing %q in %q", line, out)
		}
	}
}

func TestCapMinorsAreDistinctAcrossGPUsAndInstances(t *testing.T) {
	seen := map[uint32]string{}
	for minor := uint32(0); minor < 8; minor++ {
		for gi := 1; gi <= 7; gi++ {
			g, c := gputable.CapMinors(minor, gi, 0)
			for _, m := range []uint32{g, c} {
				key := fmt.Sprintf("gpu%d/gi%d", minor, gi)
				if other, dup := seen[m]; dup {
					t.Fatalf("minor %d for %s and %s", m, key, other)
				}
				seen[m] = key
			}
		}
	}
}
