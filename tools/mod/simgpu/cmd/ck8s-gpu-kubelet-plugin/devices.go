package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	resourceapi "k8s.io/api/resource/v1"

	"ck8s-gpu.local/tools/simgpu/internal/claimspec"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

// devicesFile is what the harness writes: the ResourceSlice's spec.devices, verbatim, and the
// GPUs in MIG mode, which NVML enumerates but the driver does not publish: a GPU with MIG on
// is published as its MIG devices only (dra-driver-nvidia-gpu 95932046 cmd/gpu-kubelet-plugin
// nvlib.go enumerateAllPossibleDevices: MIG devices where MIG mode is on, the GPU otherwise).
type devicesFile struct {
	Devices    []resourceapi.Device `json:"devices"`
	MigParents []gputable.GPU       `json:"migParents,omitempty"`
}

// loadDevices decodes the devices file strictly, so a typo in the harness fails loudly.
func loadDevices(path string) (devicesFile, error) {
	var f devicesFile
	data, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("parse %s: %w", path, err)
	}
	if len(f.Devices) == 0 {
		return f, fmt.Errorf("%s: no devices", path)
	}
	return f, nil
}

// attr looks an attribute up by its short name, or qualified with our driver's domain
// (both spellings name the same attribute in a ResourceSlice of this driver).
func attr(d resourceapi.Device, name string) (resourceapi.DeviceAttribute, bool) {
	if a, ok := d.Attributes[resourceapi.QualifiedName(name)]; ok {
		return a, true
	}
	a, ok := d.Attributes[resourceapi.QualifiedName(driverName+"/"+name)]
	return a, ok
}

func intAttr(d resourceapi.Device, name string) (int64, error) {
	a, ok := attr(d, name)
	if !ok || a.IntValue == nil {
		return 0, fmt.Errorf("device %s: no int attribute %q", d.Name, name)
	}
	return *a.IntValue, nil
}

func stringAttr(d resourceapi.Device, name string) (string, error) {
	a, ok := attr(d, name)
	if !ok || a.StringValue == nil {
		return "", fmt.Errorf("device %s: no string attribute %q", d.Name, name)
	}
	return *a.StringValue, nil
}

// nodeDevices is what the plugin knows of the node: the GPU table nvidia-smi reads, and per
// published device what prepare hands a container.
type nodeDevices struct {
	table  gputable.Table
	minors map[string]uint32       // whole GPU device name -> minor
	mig    map[string]gputable.MIG // MIG device name -> its instance
}

// buildTable turns the published devices and the MIG-mode GPUs into the node's table. A MIG
// device (type mig) names its GPU by parentUUID, which must be one of migParents; its GPU
// instance ids count from 1 per GPU in published order, its compute instance is 0 (the one CI a
// MIG manager layout creates per GI: mig-parted creates each instance with its full CI).
func buildTable(f devicesFile) (nodeDevices, error) {
	nd := nodeDevices{minors: map[string]uint32{}, mig: map[string]gputable.MIG{}}
	parents := map[string]gputable.GPU{}
	for _, g := range f.MigParents {
		parents[g.UUID] = g
		nd.table.GPUs = append(nd.table.GPUs, g)
	}
	nextGI := map[uint32]int{}
	seen := map[string]bool{}
	for _, d := range f.Devices {
		if seen[d.Name] {
			return nd, fmt.Errorf("device %s listed twice", d.Name)
		}
		seen[d.Name] = true
		if kind, _ := stringAttr(d, "type"); kind == "mig" {
			m, err := migDevice(d, parents, nextGI)
			if err != nil {
				return nd, err
			}
			nd.table.MIG = append(nd.table.MIG, m)
			nd.mig[d.Name] = m
			continue
		}
		g, err := wholeGPU(d)
		if err != nil {
			return nd, err
		}
		if _, inMIGMode := parents[g.UUID]; inMIGMode {
			return nd, fmt.Errorf("device %s: GPU %s is in MIG mode (migParents) and published whole", d.Name, g.UUID)
		}
		nd.table.GPUs = append(nd.table.GPUs, g)
		nd.minors[d.Name] = g.Minor
	}
	return nd, nd.table.Validate()
}

func wholeGPU(d resourceapi.Device) (gputable.GPU, error) {
	minor, err := intAttr(d, "minor")
	if err != nil {
		return gputable.GPU{}, err
	}
	if minor < 0 || minor >= claimspec.CtlMinor { // 255 is /dev/nvidiactl
		return gputable.GPU{}, fmt.Errorf("device %s: minor %d out of range", d.Name, minor)
	}
	index, err := intAttr(d, "index")
	if err != nil {
		return gputable.GPU{}, err
	}
	uuid, err := stringAttr(d, "uuid")
	if err != nil {
		return gputable.GPU{}, err
	}
	product, err := stringAttr(d, "productName")
	if err != nil {
		return gputable.GPU{}, err
	}
	var mib int64
	if c, ok := d.Capacity["memory"]; ok {
		mib = c.Value.Value() / (1 << 20)
	}
	return gputable.GPU{Index: int(index), Minor: uint32(minor), UUID: uuid, ProductName: product, MemoryMiB: mib}, nil
}

func migDevice(d resourceapi.Device, parents map[string]gputable.GPU, nextGI map[uint32]int) (gputable.MIG, error) {
	var m gputable.MIG
	parentUUID, err := stringAttr(d, "parentUUID")
	if err != nil {
		return m, err
	}
	parent, ok := parents[parentUUID]
	if !ok {
		return m, fmt.Errorf("device %s: parentUUID %s is not a GPU in MIG mode (migParents)", d.Name, parentUUID)
	}
	if m.UUID, err = stringAttr(d, "uuid"); err != nil {
		return m, err
	}
	if m.Profile, err = stringAttr(d, "profile"); err != nil {
		return m, err
	}
	for name := range d.Capacity { // deviceinfo.go GetDevice: memorySlice<i> = 1 per slice held
		if strings.HasPrefix(string(name), "memorySlice") {
			m.MemorySlices++
		}
	}
	nextGI[parent.Minor]++
	m.ParentMinor, m.GI, m.CI = parent.Minor, nextGI[parent.Minor], 0
	m.GICapMinor, m.CICapMinor = gputable.CapMinors(parent.Minor, m.GI, m.CI)
	return m, nil
}

// ensureCharDev makes path a character device major:minor (mode 0666, like the real
// driver's /dev/nvidia* nodes); an existing correct node is kept, a wrong one replaced.
// The nodes are inert: no driver is bound to major 195 here and nothing opens them.
func ensureCharDev(path string, major, minor uint32) error {
	want := unix.Mkdev(major, minor)
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && uint64(st.Rdev) == want: //nolint:unconvert
		return nil
	case err == nil:
		if err := os.Remove(path); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(want)); err != nil {
		return fmt.Errorf("mknod %s: %w", path, err)
	}
	return os.Chmod(path, 0o666) // mknod's mode is cut by the umask
}

// makeDevNodes creates nvidia<minor> for every GPU, nvidiactl, and nvidia-caps/nvidia-cap<N>
// for every MIG device's GI and CI in devDir.
func makeDevNodes(devDir string, t gputable.Table) error {
	if len(t.MIG) > 0 {
		caps := filepath.Join(devDir, "nvidia-caps")
		if err := os.MkdirAll(caps, 0o755); err != nil {
			return err
		}
		for _, m := range t.MIG {
			for _, c := range []uint32{m.GICapMinor, m.CICapMinor} {
				if err := ensureCharDev(filepath.Join(caps, fmt.Sprintf("nvidia-cap%d", c)), gputable.CapsMajor, c); err != nil {
					return err
				}
			}
		}
	}
	if err := os.MkdirAll(devDir, 0o755); err != nil {
		return err
	}
	if err := ensureCharDev(filepath.Join(devDir, "nvidiactl"), claimspec.NvidiaMajor, claimspec.CtlMinor); err != nil {
		return err
	}
	for _, g := range t.GPUs {
		if err := ensureCharDev(filepath.Join(devDir, fmt.Sprintf("nvidia%d", g.Minor)), claimspec.NvidiaMajor, g.Minor); err != nil {
			return err
		}
	}
	return nil
}
