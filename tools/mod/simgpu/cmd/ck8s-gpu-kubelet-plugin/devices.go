package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	resourceapi "k8s.io/api/resource/v1"

	"ck8s-gpu.local/tools/simgpu/internal/claimspec"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

// devicesFile is what the harness writes: the ResourceSlice's spec.devices, verbatim.
type devicesFile struct {
	Devices []resourceapi.Device `json:"devices"`
}

// loadDevices decodes the devices file strictly, so a typo in the harness fails loudly.
func loadDevices(path string) ([]resourceapi.Device, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f devicesFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if len(f.Devices) == 0 {
		return nil, fmt.Errorf("%s: no devices", path)
	}
	return f.Devices, nil
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

// buildTable turns the published devices into the GPU table, and maps device name -> minor
// for prepare.
func buildTable(devs []resourceapi.Device) (gputable.Table, map[string]uint32, error) {
	var t gputable.Table
	minors := map[string]uint32{}
	for _, d := range devs {
		if _, dup := minors[d.Name]; dup {
			return t, nil, fmt.Errorf("device %s listed twice", d.Name)
		}
		minor, err := intAttr(d, "minor")
		if err != nil {
			return t, nil, err
		}
		if minor < 0 || minor >= claimspec.CtlMinor { // 255 is /dev/nvidiactl
			return t, nil, fmt.Errorf("device %s: minor %d out of range", d.Name, minor)
		}
		index, err := intAttr(d, "index")
		if err != nil {
			return t, nil, err
		}
		uuid, err := stringAttr(d, "uuid")
		if err != nil {
			return t, nil, err
		}
		product, err := stringAttr(d, "productName")
		if err != nil {
			return t, nil, err
		}
		var mib int64
		if c, ok := d.Capacity["memory"]; ok {
			mib = c.Value.Value() / (1 << 20)
		}
		t.GPUs = append(t.GPUs, gputable.GPU{
			Index: int(index), Minor: uint32(minor), UUID: uuid, ProductName: product, MemoryMiB: mib,
		})
		minors[d.Name] = uint32(minor)
	}
	return t, minors, t.Validate()
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

// makeDevNodes creates nvidia<minor> for every GPU and nvidiactl in devDir.
func makeDevNodes(devDir string, t gputable.Table) error {
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
