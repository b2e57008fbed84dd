// Package fabric is the simulated NVIDIA Fabric Manager: the node's table of NVSwitch
// partitions (id -> GPU module IDs) and the exact-match lookup the GPU kubelet plugin does
// at prepare (driver 0.5, pkg/fabricmanager/manager.go).
package fabric

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Partition is one FM partition (pkg/fabricmanager/client.go Partition: ID and the GPUs'
// PhysicalID, which the driver calls gpuModuleID).
type Partition struct {
	ID           int   `json:"id"`
	GPUModuleIDs []int `json:"gpuModuleIDs"`
}

// Table is what fmGetSupportedFabricPartitions reports, as the --fabric-partitions-file holds it.
type Table struct {
	Partitions []Partition `json:"partitions"`
}

// Validate refuses what manager.go recordsPartitions refuses, with its messages.
func (t Table) Validate() error {
	ids := map[int]bool{}
	for _, p := range t.Partitions {
		if ids[p.ID] {
			return fmt.Errorf("fabricmanager: FM returned duplicate partitionId %d", p.ID)
		}
		ids[p.ID] = true
		if len(p.GPUModuleIDs) == 0 {
			return fmt.Errorf("fabricmanager: partition %d has no GPUs", p.ID)
		}
		seen := map[int]bool{}
		for _, g := range p.GPUModuleIDs {
			if seen[g] {
				return fmt.Errorf("fabricmanager: partition %d references gpuModuleID %d twice", p.ID, g)
			}
			seen[g] = true
		}
	}
	return nil
}

// Load reads and validates a table file, strictly (unknown fields refused).
func Load(path string) (Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Table{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return Table{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return t, t.Validate()
}

// FindByModuleIDs returns the partition whose member set equals moduleIDs exactly
// (manager.go FindPartitionByModuleIDs: sizes equal, every member wanted).
func (t Table) FindByModuleIDs(moduleIDs []int) (int, bool) {
	if len(moduleIDs) == 0 {
		return 0, false
	}
	want := map[int]bool{}
	for _, id := range moduleIDs {
		want[id] = true
	}
	// Lowest id first: upstream ranges over a map, and a well-formed table has one match.
	ps := append([]Partition(nil), t.Partitions...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	for _, p := range ps {
		if len(p.GPUModuleIDs) != len(want) {
			continue
		}
		match := true
		for _, g := range p.GPUModuleIDs {
			if !want[g] {
				match = false
				break
			}
		}
		if match {
			return p.ID, true
		}
	}
	return 0, false
}

// Resolve is device_state.go resolveFabricPartition + activateFabricPartition's wrapping:
// the claim's GPUs must form one FM partition, else prepare is refused with upstream's words.
func (t Table) Resolve(moduleIDs []int) (int, error) {
	id, ok := t.FindByModuleIDs(moduleIDs)
	if !ok {
		return 0, fmt.Errorf("fabric manager: GPU module set %v does not match any FM partition; refusing partition activation", moduleIDs)
	}
	return id, nil
}
