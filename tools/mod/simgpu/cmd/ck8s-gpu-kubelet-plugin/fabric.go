package main

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

	"ck8s-gpu.local/tools/simgpu/internal/fabric"
)

// moduleIDs maps device name -> gpuModuleID from the published attribute, our stand-in for
// what NVML reports (nvlib.go reads the module ID at discovery; deviceinfo.go
// addFabricManagerAttributes publishes it as `gpuModuleID`). Devices without one are absent.
func moduleIDs(devs []resourceapi.Device) (map[string]int, error) {
	out := map[string]int{}
	for _, d := range devs {
		a, ok := attr(d, "gpuModuleID")
		if !ok {
			continue
		}
		if a.IntValue == nil || *a.IntValue <= 0 {
			return nil, fmt.Errorf("device %s: gpuModuleID must be a positive int", d.Name)
		}
		out[d.Name] = int(*a.IntValue)
	}
	return out, nil
}

// claimPartition is device_state.go activateFabricPartition -> resolveFabricPartition for
// the claim's GPUs on this node: every GPU needs a module ID, and together they must be
// exactly one FM partition's members (a single GPU needs its size-1 partition).
func claimPartition(t fabric.Table, mods map[string]int, devices []string) (int, error) {
	ids := make([]int, 0, len(devices))
	for _, name := range devices {
		id, ok := mods[name]
		if !ok {
			// Upstream names the GPU by PCI bus ID; the simulated GPUs have none.
			return 0, fmt.Errorf("devices %v: fabric manager: no gpuModuleID for GPU %s", devices, name)
		}
		ids = append(ids, id)
	}
	id, err := t.Resolve(ids)
	if err != nil {
		return 0, fmt.Errorf("devices %v: %w", devices, err)
	}
	return id, nil
}
