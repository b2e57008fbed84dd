package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"sigs.k8s.io/yaml"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"ck8s-gpu.local/tools/simgpu/internal/claimspec"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

// devicesJSON is shaped like tools/dra_publisher.py's resource_slice_manifest spec.devices.
const devicesJSON = `{"devices": [
 {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}, "uuid": {"string": "GPU-aaaa"},
  "index": {"int": 0}, "minor": {"int": 0}, "productName": {"string": "NVIDIA L4"},
  "brand": {"string": "Nvidia"}, "architecture": {"string": "Ada Lovelace"},
  "driverVersion": {"version": "580.95.5"}, "cudaDriverVersion": {"version": "13.0.0"},
  "cudaComputeCapability": {"version": "8.9.0"}}, "capacity": {"memory": {"value": "23028Mi"}}},
 {"name": "gpu-1", "attributes": {"type": {"string": "gpu"}, "uuid": {"string": "GPU-bbbb"},
  "index": {"int": 1}, "minor": {"int": 1}, "productName": {"string": "NVIDIA L4"},
  "brand": {"string": "Nvidia"}, "architecture": {"string": "Ada Lovelace"},
  "driverVersion": {"version": "580.95.5"}, "cudaDriverVersion": {"version": "13.0.0"},
  "cudaComputeCapability": {"version": "8.9.0"}}, "capacity": {"memory": {"value": "23028Mi"}}}
]}`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDevicesAndTable(t *testing.T) {
	file, err := loadDevices(writeFile(t, t.TempDir(), "devices.json", devicesJSON))
	if err != nil {
		t.Fatal(err)
	}
	// Published unchanged: encoding the decoded devices gives back the harness's JSON.
	back, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal([]byte(devicesJSON), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("devices changed on load:\n got %s", back)
	}

	nd, err := buildTable(file)
	if err != nil {
		t.Fatal(err)
	}
	table, minors := nd.table, nd.minors
	wantTable := gputable.Table{GPUs: []gputable.GPU{
		{Index: 0, Minor: 0, UUID: "GPU-aaaa", ProductName: "NVIDIA L4", MemoryMiB: 23028},
		{Index: 1, Minor: 1, UUID: "GPU-bbbb", ProductName: "NVIDIA L4", MemoryMiB: 23028},
	}}
	if !reflect.DeepEqual(table, wantTable) {
		t.Errorf("table = %+v, want %+v", table, wantTable)
	}
	if !reflect.DeepEqual(minors, map[string]uint32{"gpu-0": 0, "gpu-1": 1}) {
		t.Errorf("minors = %v", minors)
	}
}

func TestLoadDevicesRejects(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"unknown-field": `{"devices": [{"name": "gpu-0", "atributes": {}}]}`,
		"empty":         `{"devices": []}`,
	} {
		if _, err := loadDevices(writeFile(t, dir, name, content)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	for name, content := range map[string]string{
		"no-minor":  `{"devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-a"}, "index": {"int": 0}, "productName": {"string": "x"}}}]}`,
		"ctl-minor": `{"devices": [{"name": "gpu-0", "attributes": {"minor": {"int": 255}, "uuid": {"string": "GPU-a"}, "index": {"int": 0}, "productName": {"string": "x"}}}]}`,
		"dup-minor": `{"devices": [
			{"name": "gpu-0", "attributes": {"minor": {"int": 0}, "uuid": {"string": "GPU-a"}, "index": {"int": 0}, "productName": {"string": "x"}}},
			{"name": "gpu-1", "attributes": {"minor": {"int": 0}, "uuid": {"string": "GPU-b"}, "index": {"int": 1}, "productName": {"string": "x"}}}]}`,
	} {
		file, err := loadDevices(writeFile(t, dir, name, content))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := buildTable(file); err == nil {
			t.Errorf("%s: buildTable accepted it", name)
		}
	}
}

func newTestDriver(t *testing.T, fault string) *driver {
	t.Helper()
	dir := t.TempDir()
	file, err := loadDevices(writeFile(t, dir, "devices.json", devicesJSON))
	if err != nil {
		t.Fatal(err)
	}
	nd, err := buildTable(file)
	if err != nil {
		t.Fatal(err)
	}
	table, minors := nd.table, nd.minors
	d := &driver{
		nodeName:  "node-a",
		cdiDir:    filepath.Join(dir, "cdi"),
		faultFile: filepath.Join(dir, "fault"),
		paths:     claimspec.HostPaths{DevDir: "/sim/dev", NvidiaSMI: "/sim/nvidia-smi", GPUTable: "/sim/gpus.json"},
		minors:    minors,
		allMinors: table.Minors(),
	}
	if err := os.MkdirAll(d.cdiDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if fault != "" {
		writeFile(t, dir, "fault", fault)
	}
	return d
}

func claim(results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: types.UID("uid-1")},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results},
		}},
	}
}

func result(req, drv, pool, dev string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: req, Driver: drv, Pool: pool, Device: dev}
}

func readSpec(t *testing.T, d *driver, uid string) *cdispec.Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(d.cdiDir, claimspec.FileName(uid)))
	if err != nil {
		t.Fatal(err)
	}
	var s cdispec.Spec
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestPrepareUnprepare(t *testing.T) {
	d := newTestDriver(t, "")
	c := claim(
		result("gpu", driverName, "node-a", "gpu-1"),
		result("gpu", driverName, "node-b", "gpu-0"),          // another node's pool
		result("nic", "other.example.com", "node-a", "gpu-0"), // another driver
	)
	for range 2 { // the kubelet may prepare twice
		res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
		if err != nil {
			t.Fatal(err)
		}
		r := res["uid-1"]
		want := []kubeletplugin.Device{{
			Requests: []string{"gpu"}, PoolName: "node-a", DeviceName: "gpu-1",
			CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=uid-1-gpu-1"},
		}}
		if r.Err != nil || !reflect.DeepEqual(r.Devices, want) {
			t.Fatalf("prepare = %+v, want %+v", r, want)
		}
	}
	s := readSpec(t, d, "uid-1")
	if len(s.Devices) != 1 || s.Devices[0].Name != "uid-1-gpu-1" || s.Devices[0].ContainerEdits.DeviceNodes[0].Path != "/dev/nvidia1" {
		t.Errorf("spec devices = %+v", s.Devices)
	}

	ref := kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c"}, UID: "uid-1"}
	for range 2 { // unprepare of a gone spec is fine too
		res, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{ref})
		if err != nil || res["uid-1"] != nil {
			t.Fatalf("unprepare = %v, %v", res, err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.cdiDir, claimspec.FileName("uid-1"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec left after unprepare: %v", err)
	}
}

func TestPrepareFaultsAndErrors(t *testing.T) {
	d := newTestDriver(t, "wrong-device\n")
	res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{claim(result("gpu", driverName, "node-a", "gpu-1"))})
	if res["uid-1"].Err != nil {
		t.Fatal(res["uid-1"].Err)
	}
	if n := readSpec(t, d, "uid-1").Devices[0].ContainerEdits.DeviceNodes[0]; n.Path != "/dev/nvidia0" || n.Minor != 0 {
		t.Errorf("wrong-device: node %+v, want gpu-0's (wrapped)", *n)
	}

	// The fault file is read on every prepare: switching it changes the next spec.
	writeFile(t, filepath.Dir(d.faultFile), "fault", "cdi-refused")
	d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{claim(result("gpu", driverName, "node-a", "gpu-1"))})
	if err := cdispec.ValidateVersion(readSpec(t, d, "uid-1")); err == nil {
		t.Error("cdi-refused spec passes CDI validation")
	}

	writeFile(t, filepath.Dir(d.faultFile), "fault", "")
	for name, c := range map[string]*resourceapi.ResourceClaim{
		"unknown device": claim(result("gpu", driverName, "node-a", "gpu-9")),
		"unallocated":    {ObjectMeta: metav1.ObjectMeta{UID: "uid-2"}},
	} {
		res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
		if res[c.UID].Err == nil {
			t.Errorf("%s: prepare succeeded", name)
		}
	}
}

func TestEnsureCharDev(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nvidia3")
	if err := ensureCharDev(p, 195, 3); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mknod not permitted here")
		}
		t.Fatal(err)
	}
	check := func() {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(uint64(st.Rdev)) != 195 || unix.Minor(uint64(st.Rdev)) != 3 || st.Mode&0o777 != 0o666 {
			t.Errorf("node mode %o rdev %d:%d", st.Mode, unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
		}
	}
	check()
	if err := ensureCharDev(p, 195, 3); err != nil { // idempotent
		t.Fatal(err)
	}
	check()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "nvidia3", "stale") // a wrong entry is replaced
	if err := ensureCharDev(p, 195, 3); err != nil {
		t.Fatal(err)
	}
	check()
}
