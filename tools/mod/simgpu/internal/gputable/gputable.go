// Package gputable is the node's simulated GPU table: the kubelet plugin writes it, the
// simulated nvidia-smi reads it (mounted into the container) to name the GPUs whose
// /dev/nvidia<minor> nodes it finds. Standard library only, so nvidia-smi stays small.
package gputable

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"ck8s-gpu.local/tools/simgpu/internal/atomicfile"
)

// CapsMajor is the simulated nvidia-caps character major. The kernel assigns the real one at
// load time (its line in /proc/devices); the simulator has no kernel module, so it fixes one.
const CapsMajor = 241

// GPU is one GPU of the node, keyed by its device minor (/dev/nvidia<minor>).
type GPU struct {
	Index       int    `json:"index"` // index on the node (the ResourceSlice's "index" attribute)
	Minor       uint32 `json:"minor"`
	UUID        string `json:"uuid"`
	ProductName string `json:"productName"`
	MemoryMiB   int64  `json:"memoryMiB"`
}

// MIG is one MIG device (a GPU instance with its one compute instance) of a GPU in MIG mode.
// A container reaches it through its parent's /dev/nvidia<minor> and two nvidia-caps nodes,
// the GI's and the CI's access capability (dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/cdi.go
// GetDevNodesForMigDevice: /dev/nvidia-caps/nvidia-cap<GIm> and nvidia-cap<CIm>).
type MIG struct {
	ParentMinor uint32 `json:"parentMinor"`
	UUID        string `json:"uuid"`    // MIG-<uuid>
	Profile     string `json:"profile"` // e.g. 1g.10gb, as nvidia-smi -L names it
	GI          int    `json:"gi"`
	CI          int    `json:"ci"`
	// MemorySlices is how many of the GPU's 8 memory slices the instance holds.
	MemorySlices int    `json:"memorySlices"`
	GICapMinor   uint32 `json:"giCapMinor"`
	CICapMinor   uint32 `json:"ciCapMinor"`
}

// Table is the content of gpus.json.
type Table struct {
	GPUs []GPU `json:"gpus"`
	MIG  []MIG `json:"mig,omitempty"`
}

// Validate rejects rows nvidia-smi could not use: missing UUID, two rows for one minor, a MIG
// device of no GPU of the table, or two MIG devices sharing a capability node.
func (t Table) Validate() error {
	seen := map[uint32]bool{}
	for _, g := range t.GPUs {
		if g.UUID == "" {
			return fmt.Errorf("gpu with minor %d has no uuid", g.Minor)
		}
		if seen[g.Minor] {
			return fmt.Errorf("minor %d appears twice", g.Minor)
		}
		seen[g.Minor] = true
	}
	caps := map[uint32]bool{}
	for _, m := range t.MIG {
		if m.UUID == "" {
			return fmt.Errorf("MIG device gi %d of minor %d has no uuid", m.GI, m.ParentMinor)
		}
		if !seen[m.ParentMinor] {
			return fmt.Errorf("MIG device %s: no GPU with minor %d", m.UUID, m.ParentMinor)
		}
		for _, c := range []uint32{m.GICapMinor, m.CICapMinor} {
			if caps[c] {
				return fmt.Errorf("MIG device %s: capability minor %d appears twice", m.UUID, c)
			}
			caps[c] = true
		}
	}
	return nil
}

// MIGOf returns the MIG devices of the GPU with this minor, in table order.
func (t Table) MIGOf(minor uint32) []MIG {
	var out []MIG
	for _, m := range t.MIG {
		if m.ParentMinor == minor {
			out = append(out, m)
		}
	}
	return out
}

// CapMinors are the nvidia-caps minors of a MIG device's GPU instance and compute instance. On a
// real host they are whatever /proc/driver/nvidia-caps/mig-minors says (the MIG User Guide,
// "Device Enumeration": the device nodes under /dev/nvidia-caps follow that file), which nothing
// here has; the simulator numbers them itself, one block per GPU of 15 GIs, each its own access
// minor followed by 8 CIs', after the two it leaves to config and monitor. Distinct per device
// is what matters: a container given one MIG device must not see another's nodes.
func CapMinors(parentMinor uint32, gi, ci int) (uint32, uint32) {
	const perGI, gisPerGPU = 1 + 8, 15
	base := 3 + parentMinor*gisPerGPU*perGI + uint32(gi)*perGI
	return base, base + 1 + uint32(ci)
}

// ByMinor finds the GPU whose device node has this minor.
func (t Table) ByMinor(minor uint32) (GPU, bool) {
	for _, g := range t.GPUs {
		if g.Minor == minor {
			return g, true
		}
	}
	return GPU{}, false
}

// Minors returns the node's minors in ascending order.
func (t Table) Minors() []uint32 {
	m := make([]uint32, 0, len(t.GPUs))
	for _, g := range t.GPUs {
		m = append(m, g.Minor)
	}
	sort.Slice(m, func(i, j int) bool { return m[i] < m[j] })
	return m
}

// Read loads and validates a table; any failure means "no usable table".
func Read(path string) (Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Table{}, err
	}
	var t Table
	if err := json.Unmarshal(data, &t); err != nil {
		return Table{}, fmt.Errorf("parse %s: %w", path, err)
	}
	if err := t.Validate(); err != nil {
		return Table{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Write stores the table atomically, world-readable: containers read it through a ro bind mount.
func Write(path string, t Table) error {
	if err := t.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}
