package claimspec

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"sigs.k8s.io/yaml"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

const uid = "dab5ab50-d59a-42a6-af16-cfd4628c0f7a"

var paths = HostPaths{DevDir: "/sim/dev", NvidiaSMI: "/sim/bin/nvidia-smi", GPUTable: "/sim/state/gpus.json"}

func TestNames(t *testing.T) {
	if got, want := QualifiedName(uid, "gpu-0"), "k8s.gpu.nvidia.com/claim="+uid+"-gpu-0"; got != want {
		t.Errorf("QualifiedName = %q, want %q", got, want)
	}
	if got, want := FileName(uid), "k8s.gpu.nvidia.com-claim_"+uid+".yaml"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
	if got := FileName("a/b"); got != "k8s.gpu.nvidia.com-claim_a_b.yaml" {
		t.Errorf("FileName(a/b) = %q: a slash must not make a subdirectory", got)
	}
}

func deviceNodes(d cdispec.Device) map[string]cdispec.DeviceNode {
	m := map[string]cdispec.DeviceNode{}
	for _, n := range d.ContainerEdits.DeviceNodes {
		m[n.Path] = *n
	}
	return m
}

func TestBuildNoFault(t *testing.T) {
	s, err := Build(uid, []Allocated{{Device: "gpu-1", Minor: 1}, {Device: "gpu-0", Minor: 0}}, []uint32{0, 1}, paths, NoFault)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "k8s.gpu.nvidia.com/claim" {
		t.Errorf("kind = %q", s.Kind)
	}
	if err := cdispec.ValidateVersion(s); err != nil {
		t.Errorf("CDI would refuse the healthy spec: %v", err)
	}
	if len(s.Devices) != 2 {
		t.Fatalf("got %d CDI devices, want one per allocated device", len(s.Devices))
	}
	for i, want := range []struct {
		name  string
		minor uint32
	}{{uid + "-gpu-1", 1}, {uid + "-gpu-0", 0}} {
		d := s.Devices[i]
		if d.Name != want.name {
			t.Errorf("device %d name = %q, want %q", i, d.Name, want.name)
		}
		nodes := deviceNodes(d)
		if len(nodes) != 1 {
			t.Errorf("device %s has %d nodes, want only its own /dev/nvidiaN", d.Name, len(nodes))
		}
		path := "/dev/nvidia" + itoa(want.minor)
		n, ok := nodes[path]
		if !ok {
			t.Fatalf("device %s lacks %s: %v", d.Name, path, nodes)
		}
		if n.HostPath != filepath.Join(paths.DevDir, "nvidia"+itoa(want.minor)) ||
			n.Type != "c" || n.Major != 195 || n.Minor != int64(want.minor) {
			t.Errorf("device node %+v", n)
		}
	}

	ce := s.ContainerEdits
	if !reflect.DeepEqual(ce.Env, []string{"NVIDIA_VISIBLE_DEVICES=void"}) {
		t.Errorf("env = %v: only NVIDIA_VISIBLE_DEVICES=void, never UUIDs", ce.Env)
	}
	if len(ce.DeviceNodes) != 1 || *ce.DeviceNodes[0] != (cdispec.DeviceNode{
		Path: "/dev/nvidiactl", HostPath: "/sim/dev/nvidiactl", Type: "c", Major: 195, Minor: 255, Permissions: "rwm",
	}) {
		t.Errorf("claim-wide device nodes = %+v, want /dev/nvidiactl 195:255", ce.DeviceNodes)
	}
	mounts := map[string]cdispec.Mount{}
	for _, m := range ce.Mounts {
		mounts[m.ContainerPath] = *m
	}
	for cpath, host := range map[string]string{
		"/usr/bin/nvidia-smi":       paths.NvidiaSMI,
		"/run/nvidia-sim/gpus.json": paths.GPUTable,
	} {
		m, ok := mounts[cpath]
		if !ok || m.HostPath != host {
			t.Errorf("mount %s = %+v, want from %s", cpath, m, host)
			continue
		}
		opts := map[string]bool{}
		for _, o := range m.Options {
			opts[o] = true
		}
		if !opts["ro"] || !opts["rbind"] {
			t.Errorf("mount %s options %v: want a read-only bind", cpath, m.Options)
		}
	}
}

func TestBuildCDIRefused(t *testing.T) {
	s, err := Build(uid, []Allocated{{Device: "gpu-0", Minor: 0}}, []uint32{0, 1}, paths, CDIRefused)
	if err != nil {
		t.Fatal(err)
	}
	// The same check containerd's CDI cache runs on every spec file it loads.
	if err := cdispec.ValidateVersion(s); err == nil {
		t.Errorf("cdiVersion %q passed CDI validation; the fault would not fail the container", s.Version)
	}
}

func TestBuildWrongDevice(t *testing.T) {
	for _, tc := range []struct {
		alloc, want uint32
		node        []uint32
	}{
		{0, 1, []uint32{0, 1, 2}},
		{1, 2, []uint32{2, 0, 1}}, // unsorted node list
		{2, 0, []uint32{0, 1, 2}}, // wraps
		{3, 7, []uint32{7, 3}},    // sparse minors
		{0, 0, []uint32{0}},       // one GPU: nothing else to expose
	} {
		s, err := Build(uid, []Allocated{{Device: "gpu-x", Minor: tc.alloc}}, tc.node, paths, WrongDevice)
		if err != nil {
			t.Fatal(err)
		}
		if err := cdispec.ValidateVersion(s); err != nil {
			t.Errorf("wrong-device spec must still load: %v", err)
		}
		d := s.Devices[0]
		if d.Name != uid+"-gpu-x" {
			t.Errorf("name = %q: the CDI device keeps the allocated device's name", d.Name)
		}
		n := d.ContainerEdits.DeviceNodes[0]
		if n.Minor != int64(tc.want) || n.HostPath != filepath.Join(paths.DevDir, "nvidia"+itoa(tc.want)) || n.Path != "/dev/nvidia"+itoa(tc.want) {
			t.Errorf("alloc minor %d on %v: node %+v, want minor %d", tc.alloc, tc.node, *n, tc.want)
		}
	}
}

func itoa(u uint32) string { return strconv.FormatUint(uint64(u), 10) }

func TestBuildNoDevices(t *testing.T) {
	if _, err := Build(uid, nil, []uint32{0}, paths, NoFault); err == nil {
		t.Error("Build with no devices succeeded")
	}
}

func TestWriteRemove(t *testing.T) {
	dir := t.TempDir()
	s, err := Build(uid, []Allocated{{Device: "gpu-0", Minor: 0}}, []uint32{0}, paths, NoFault)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // prepare may run twice
		path, err := Write(dir, uid, s)
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(dir, FileName(uid)) {
			t.Errorf("path = %s", path)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %d files, want the one spec (no temp files)", len(entries))
	}
	// Parse it the way the CDI cache does (pkg/cdi/spec.go ParseSpec: strict YAML).
	data, err := os.ReadFile(filepath.Join(dir, FileName(uid)))
	if err != nil {
		t.Fatal(err)
	}
	var back cdispec.Spec
	if err := yaml.UnmarshalStrict(data, &back); err != nil {
		t.Fatalf("strict parse: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("file content differs from the built spec:\n%s", data)
	}
	for range 2 {
		if err := Remove(dir, uid); err != nil {
			t.Errorf("Remove: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, FileName(uid))); !os.IsNotExist(err) {
		t.Errorf("spec still there after Remove: %v", err)
	}
}

func TestReadFault(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fault")
	if f, err := ReadFault(p); err != nil || f != NoFault {
		t.Errorf("absent file: %q, %v", f, err)
	}
	for content, want := range map[string]Fault{"": NoFault, "cdi-refused\n": CDIRefused, " wrong-device ": WrongDevice,
		"unhealthy\n": Unhealthy} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if f, err := ReadFault(p); err != nil || f != want {
			t.Errorf("%q: got %q, %v; want %q", content, f, err, want)
		}
	}
	if err := os.WriteFile(p, []byte("typo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFault(p); err == nil {
		t.Error("unknown fault accepted")
	}
}
