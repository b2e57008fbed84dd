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

// GPU is one GPU of the node, keyed by its device minor (/dev/nvidia<minor>).
type GPU struct {
	Index       int    `json:"index"` // index on the node (the ResourceSlice's "index" attribute)
	Minor       uint32 `json:"minor"`
	UUID        string `json:"uuid"`
	ProductName string `json:"productName"`
	MemoryMiB   int64  `json:"memoryMiB"`
}

// Table is the content of gpus.json.
type Table struct {
	GPUs []GPU `json:"gpus"`
}

// Validate rejects rows nvidia-smi could not use: missing UUID, or two rows for one minor.
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
	return nil
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
