package main

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ck8s-gpu.local/tools/simgpu/internal/fabric"
	"ck8s-gpu.local/tools/simgpu/internal/featuregate"
)

// hgxTable is the HGX 8-GPU default partition layout (tools/dra_publisher.py hgx_8gpu_partitions).
func hgxTable() *fabric.Table {
	return &fabric.Table{Partitions: []fabric.Partition{
		{ID: 0, GPUModuleIDs: []int{1, 2, 3, 4, 5, 6, 7, 8}}, {ID: 1, GPUModuleIDs: []int{1, 2, 3, 4}},
		{ID: 2, GPUModuleIDs: []int{5, 6, 7, 8}}, {ID: 3, GPUModuleIDs: []int{1, 3}}, {ID: 4, GPUModuleIDs: []int{2, 4}},
		{ID: 5, GPUModuleIDs: []int{5, 7}}, {ID: 6, GPUModuleIDs: []int{6, 8}}, {ID: 7, GPUModuleIDs: []int{1}},
		{ID: 8, GPUModuleIDs: []int{2}}, {ID: 9, GPUModuleIDs: []int{3}}, {ID: 10, GPUModuleIDs: []int{4}},
		{ID: 11, GPUModuleIDs: []int{5}}, {ID: 12, GPUModuleIDs: []int{6}}, {ID: 13, GPUModuleIDs: []int{7}},
		{ID: 14, GPUModuleIDs: []int{8}},
	}}
}

// hgxDevices are 8 GPUs, gpu-i with gpuModuleID i+1, as dra_publisher publishes them.
func hgxDevices() []resourceapi.Device {
	var out []resourceapi.Device
	for i := range 8 {
		out = append(out, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"minor": {IntValue: ptr.To(int64(i))}, "gpuModuleID": {IntValue: ptr.To(int64(i + 1))},
		}})
	}
	return out
}

func newHGXDriver(t *testing.T, gates string, table *fabric.Table) *driver {
	t.Helper()
	g, err := featuregate.Parse(gates)
	if err != nil {
		t.Fatal(err)
	}
	devs := hgxDevices()
	mods, err := moduleIDs(devs)
	if err != nil {
		t.Fatal(err)
	}
	d := newTestDriver(t, "")
	d.minors, d.allMinors = map[string]uint32{}, nil
	for i := range 8 {
		d.minors[fmt.Sprintf("gpu-%d", i)] = uint32(i)
		d.allMinors = append(d.allMinors, uint32(i))
	}
	d.gates, d.fabric, d.moduleIDs, d.devices = g, table, mods, devs
	return d
}

func prepareGPUs(d *driver, names ...string) error {
	var rs []resourceapi.DeviceRequestAllocationResult
	for _, n := range names {
		rs = append(rs, result("gpus", driverName, "node-a", n))
	}
	res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{claim(rs...)})
	return res["uid-1"].Err
}

func TestPrepareNeedsExactlyOneFabricPartition(t *testing.T) {
	d := newHGXDriver(t, "FabricManagerPartitioning=true", hgxTable())
	for _, ok := range [][]string{
		{"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, {"gpu-4", "gpu-6"}, {"gpu-5"},
		{"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"},
	} {
		if err := prepareGPUs(d, ok...); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	// Splitting an NVLink group: modules [1 2] and [1 2 5 6] are no partition of the table.
	for _, bad := range [][]string{{"gpu-0", "gpu-1"}, {"gpu-0", "gpu-1", "gpu-4", "gpu-5"}, {"gpu-0", "gpu-1", "gpu-2"}} {
		err := prepareGPUs(d, bad...)
		if err == nil || !strings.Contains(err.Error(), "does not match any FM partition") ||
			!strings.Contains(err.Error(), fmt.Sprint(bad)) {
			t.Errorf("%v: err = %v, want the devices and no FM partition named", bad, err)
		}
	}
	// A single GPU needs its size-1 partition, as upstream: a table without them refuses it.
	d.fabric = &fabric.Table{Partitions: hgxTable().Partitions[:7]}
	if err := prepareGPUs(d, "gpu-5"); err == nil || !strings.Contains(err.Error(), "module set [6] does not match") {
		t.Errorf("single GPU without size-1 partition: %v", err)
	}
	// A GPU without a module ID cannot be placed in a partition.
	d.fabric = hgxTable()
	delete(d.moduleIDs, "gpu-7")
	if err := prepareGPUs(d, "gpu-7"); err == nil || !strings.Contains(err.Error(), "no gpuModuleID for GPU gpu-7") {
		t.Errorf("no module ID: %v", err)
	}
}

func TestPrepareIgnoresFabricWhenOff(t *testing.T) {
	for name, d := range map[string]*driver{
		"gate off":  newHGXDriver(t, "", hgxTable()),
		"no fabric": newHGXDriver(t, "FabricManagerPartitioning=true", nil),
	} {
		if err := prepareGPUs(d, "gpu-0", "gpu-1"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestUnhealthyFaultTaintsAndRepublishes(t *testing.T) {
	d := newHGXDriver(t, "NVMLDeviceHealthCheck=true", nil)
	var published [][]resourceapi.Device
	d.publish = func(_ context.Context, devs []resourceapi.Device) error {
		published = append(published, devs)
		return nil
	}
	writeFile(t, filepath.Dir(d.faultFile), "fault", "unhealthy\n")
	for range 2 { // the second prepare finds the taint already there: no republish
		if err := prepareGPUs(d, "gpu-3", "gpu-1"); err != nil {
			t.Fatalf("prepare of an unhealthy device is not refused upstream: %v", err)
		}
	}
	if len(published) != 1 {
		t.Fatalf("published %d times, want 1", len(published))
	}
	want := []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	for _, dev := range published[0] {
		if dev.Name == "gpu-3" && !reflect.DeepEqual(dev.Taints, want) {
			t.Errorf("gpu-3 taints = %+v, want %+v", dev.Taints, want)
		}
		if dev.Name != "gpu-3" && len(dev.Taints) != 0 {
			t.Errorf("%s tainted: %+v", dev.Name, dev.Taints)
		}
	}
	if len(published[0]) != 8 {
		t.Errorf("republished %d devices, want the whole slice", len(published[0]))
	}

	// With the gate off upstream runs no health monitor: nothing is published.
	d = newHGXDriver(t, "", nil)
	d.publish = func(context.Context, []resourceapi.Device) error { t.Error("published with the gate off"); return nil }
	writeFile(t, filepath.Dir(d.faultFile), "fault", "unhealthy")
	if err := prepareGPUs(d, "gpu-0"); err != nil {
		t.Fatal(err)
	}
}

func TestAddOrUpdateTaint(t *testing.T) {
	added := metav1.NewTime(time.Unix(1700000000, 0))
	devs := []resourceapi.Device{{Name: "gpu-0", Taints: []resourceapi.DeviceTaint{
		{Key: taintKeyXID, Value: "79", Effect: resourceapi.DeviceTaintEffectNoSchedule, TimeAdded: &added},
		{Key: "example.com/other", Effect: resourceapi.DeviceTaintEffectNoExecute},
	}}}
	out, changed := addOrUpdateTaint(devs, "gpu-0", xidTaint())
	if !changed || out[0].Taints[0].Value != "48" || out[0].Taints[0].TimeAdded != nil || len(out[0].Taints) != 2 {
		t.Errorf("update = %+v, %v", out[0].Taints, changed)
	}
	if devs[0].Taints[0].Value != "79" {
		t.Error("input modified")
	}
	if _, changed := addOrUpdateTaint(out, "gpu-0", xidTaint()); changed {
		t.Error("same taint counted as a change")
	}
	if _, changed := addOrUpdateTaint(out, "gpu-9", xidTaint()); changed {
		t.Error("unknown device tainted")
	}
}

func TestLoadFabric(t *testing.T) {
	dir := t.TempDir()
	on, _ := featuregate.Parse("FabricManagerPartitioning=true")
	good := writeFile(t, dir, "good.json", `{"partitions": [{"id": 7, "gpuModuleIDs": [1]}]}`)
	bad := writeFile(t, dir, "bad.json", `{"partitions": [{"id": 7, "gpuModuleIDs": [1, 1]}]}`)
	if f, err := loadFabric(config{fabricFile: good}); f != nil || err != nil {
		t.Errorf("gate off: %v, %v", f, err)
	}
	if f, err := loadFabric(config{gates: on}); f != nil || err != nil {
		t.Errorf("no fabric: %v, %v", f, err)
	}
	if f, err := loadFabric(config{gates: on, fabricFile: good}); err != nil || len(f.Partitions) != 1 {
		t.Errorf("good: %v, %v", f, err)
	}
	if _, err := loadFabric(config{gates: on, fabricFile: bad}); err == nil || !strings.Contains(err.Error(), "could not be opened") {
		t.Errorf("bad: %v", err)
	}
}
