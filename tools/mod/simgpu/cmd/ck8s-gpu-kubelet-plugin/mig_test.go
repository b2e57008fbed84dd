package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"ck8s-gpu.local/tools/simgpu/internal/claimspec"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

// migDevice is shaped like tools/dra_publisher.py mig_device (dra-driver-nvidia-gpu
// deviceinfo.go MigDeviceInfo.GetDevice: CommonAttributesMig + uuid, no index or minor).
func migDeviceJSON(name, parent, uuid, profile string) string {
	return fmt.Sprintf(`{"name": %q, "attributes": {"type": {"string": "mig"}, "uuid": {"string": %q},
	  "parentUUID": {"string": %q}, "profile": {"string": %q}, "productName": {"string": "NVIDIA H100 80GB HBM3"}},
	  "capacity": {"memory": {"value": "10240Mi"}, "memorySlice0": {"value": "1"}}}`, name, uuid, parent, profile)
}

const migParentsJSON = `"migParents": [{"index": 0, "minor": 0, "uuid": "GPU-aaaa", "productName": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559}]`

func migFile(t *testing.T, dir string) string {
	t.Helper()
	return writeFile(t, dir, "devices.json", `{"devices": [`+
		migDeviceJSON("gpu-0-mig-1g10gb-19-0", "GPU-aaaa", "MIG-1", "1g.10gb")+`,`+
		migDeviceJSON("gpu-0-mig-3g40gb-9-4", "GPU-aaaa", "MIG-2", "3g.40gb")+`,
	 {"name": "gpu-1", "attributes": {"type": {"string": "gpu"}, "uuid": {"string": "GPU-bbbb"}, "index": {"int": 1},
	  "minor": {"int": 1}, "productName": {"string": "NVIDIA H100 80GB HBM3"}}}],`+migParentsJSON+`}`)
}

func TestMIGDevicesBuildTheTableUnderTheirGPU(t *testing.T) {
	file, err := loadDevices(migFile(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	nd, err := buildTable(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(nd.table.GPUs) != 2 || !reflect.DeepEqual(nd.minors, map[string]uint32{"gpu-1": 1}) {
		t.Errorf("GPUs %+v, whole GPUs %v: the MIG-mode GPU is in the table but not preparable whole", nd.table.GPUs, nd.minors)
	}
	m1, m2 := nd.mig["gpu-0-mig-1g10gb-19-0"], nd.mig["gpu-0-mig-3g40gb-9-4"]
	if m1.UUID != "MIG-1" || m1.GI != 1 || m2.GI != 2 || m1.ParentMinor != 0 || m2.Profile != "3g.40gb" {
		t.Errorf("MIG rows %+v %+v", m1, m2)
	}
}

func TestPrepareGivesAMIGDeviceItsGPUAndItsTwoCapabilities(t *testing.T) {
	dir := t.TempDir()
	file, err := loadDevices(migFile(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	nd, err := buildTable(file)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{nodeName: "node-a", cdiDir: filepath.Join(dir, "cdi"), faultFile: filepath.Join(dir, "fault"),
		paths:  claimspec.HostPaths{DevDir: "/sim/dev", NvidiaSMI: "/sim/nvidia-smi", GPUTable: "/sim/gpus.json"},
		minors: nd.minors, mig: nd.mig, allMinors: nd.table.Minors()}
	if err := os.MkdirAll(d.cdiDir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := claim(result("gpu", driverName, "node-a", "gpu-0-mig-3g40gb-9-4"))
	res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil || res["uid-1"].Err != nil {
		t.Fatalf("prepare: %v %+v", err, res)
	}
	m := nd.mig["gpu-0-mig-3g40gb-9-4"]
	got := deviceNodePaths(readSpec(t, d, "uid-1"))
	want := map[string][2]int64{
		"/dev/nvidia0": {claimspec.NvidiaMajor, 0},
		fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", m.GICapMinor): {gputable.CapsMajor, int64(m.GICapMinor)},
		fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", m.CICapMinor): {gputable.CapsMajor, int64(m.CICapMinor)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("device nodes %v, want %v", got, want)
	}
}

func TestMIGDevicesAreRefusedWithoutTheirGPUOrBesideItWhole(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"no-parent": `{"devices": [` + migDeviceJSON("gpu-0-mig-1g10gb-19-0", "GPU-zzzz", "MIG-1", "1g.10gb") + `],` + migParentsJSON + `}`,
		"whole-too": `{"devices": [` + migDeviceJSON("gpu-0-mig-1g10gb-19-0", "GPU-aaaa", "MIG-1", "1g.10gb") + `,
		  {"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-aaaa"}, "index": {"int": 0}, "minor": {"int": 0},
		   "productName": {"string": "x"}}}],` + migParentsJSON + `}`,
		"no-profile": `{"devices": [{"name": "m", "attributes": {"type": {"string": "mig"}, "uuid": {"string": "MIG-1"},
		  "parentUUID": {"string": "GPU-aaaa"}}}],` + migParentsJSON + `}`,
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

// deviceNodePaths: path -> (major, minor) over every CDI device of the spec (not the spec-wide
// nvidiactl).
func deviceNodePaths(s *cdispec.Spec) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, d := range s.Devices {
		for _, n := range d.ContainerEdits.DeviceNodes {
			out[n.Path] = [2]int64{n.Major, n.Minor}
		}
	}
	return out
}
