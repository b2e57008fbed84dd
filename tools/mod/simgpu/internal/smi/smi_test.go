package smi

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

// fakeDev is a temp dir of empty files plus the device numbers stat should report for them.
type fakeDev struct {
	dir   string
	nodes map[string]DevInfo
}

func newFakeDev(t *testing.T, nodes map[string]DevInfo) fakeDev {
	t.Helper()
	dir := t.TempDir()
	for name := range nodes {
		path := filepath.Join(dir, name) // a name with a slash (nvidia-caps/...) sits in a subdirectory
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fakeDev{dir, nodes}
}

func (f fakeDev) stat(path string) (DevInfo, error) {
	if _, err := os.Lstat(path); err != nil {
		return DevInfo{}, err
	}
	rel, err := filepath.Rel(f.dir, path)
	if err != nil {
		return DevInfo{}, err
	}
	info, ok := f.nodes[rel]
	if !ok {
		return DevInfo{}, errors.New("not a device")
	}
	return info, nil
}

func gpu(minor uint32) DevInfo { return DevInfo{CharDev: true, Major: 195, Minor: minor} }

var ctl = gpu(255)

var table = gputable.Table{GPUs: []gputable.GPU{
	{Index: 0, Minor: 0, UUID: "GPU-aaaa", ProductName: "NVIDIA L4", MemoryMiB: 23028},
	{Index: 1, Minor: 1, UUID: "GPU-bbbb", ProductName: "NVIDIA L4", MemoryMiB: 23028},
	{Index: 2, Minor: 2, UUID: "GPU-cccc", ProductName: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960},
}}

func writeTable(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gpus.json")
	if err := gputable.Write(p, table); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, nodes map[string]DevInfo, tablePath string, args ...string) (string, int) {
	t.Helper()
	d := newFakeDev(t, nodes)
	var out strings.Builder
	code := Run(args, Env{DevDir: d.dir, Stat: d.stat, TablePath: tablePath}, &out)
	return out.String(), code
}

func TestEnumerate(t *testing.T) {
	d := newFakeDev(t, map[string]DevInfo{
		"nvidia10":      gpu(10),
		"nvidia2":       gpu(2),
		"nvidiactl":     ctl,
		"nvidia-uvm":    {CharDev: true, Major: 510, Minor: 0},
		"nvidia3":       {CharDev: false, Major: 195, Minor: 3}, // a regular file
		"nvidia4":       {CharDev: true, Major: 1, Minor: 4},    // another driver's major
		"nvidia5":       gpu(7),                                 // minor comes from stat, not the name
		"nvidia-caps":   gpu(9),
		"nvidia6x":      gpu(6),
		"renamed-gpu-8": gpu(8),
	})
	got, err := Enumerate(d.dir, d.stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{2, 7, 10}; !reflect.DeepEqual(got, want) {
		t.Errorf("Enumerate = %v, want %v (ascending, numerically)", got, want)
	}
	if _, err := Enumerate(filepath.Join(d.dir, "missing"), d.stat); err == nil {
		t.Error("Enumerate of a missing dir succeeded")
	}
}

func TestListOnlyVisibleGPUs(t *testing.T) {
	tp := writeTable(t)
	out, code := run(t, map[string]DevInfo{"nvidiactl": ctl, "nvidia2": gpu(2), "nvidia1": gpu(1)}, tp, "-L")
	want := "GPU 0: NVIDIA L4 (UUID: GPU-bbbb)\nGPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-cccc)\n"
	if code != 0 || out != want {
		t.Errorf("-L = %d %q, want 0 %q", code, out, want)
	}
	// --list-gpus and no argument list the same.
	for _, args := range [][]string{{"--list-gpus"}, nil} {
		o, c := run(t, map[string]DevInfo{"nvidiactl": ctl, "nvidia2": gpu(2), "nvidia1": gpu(1)}, tp, args...)
		if c != 0 || o != want {
			t.Errorf("%v = %d %q", args, c, o)
		}
	}
}

func TestQuery(t *testing.T) {
	tp := writeTable(t)
	nodes := map[string]DevInfo{"nvidiactl": ctl, "nvidia0": gpu(0), "nvidia2": gpu(2)}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--query-gpu=index,uuid,name,memory.total", "--format=csv"},
			"index, uuid, name, memory.total [MiB]\n0, GPU-aaaa, NVIDIA L4, 23028 MiB\n1, GPU-cccc, NVIDIA A100-SXM4-40GB, 40960 MiB\n"},
		{[]string{"--query-gpu=uuid,memory.total", "--format=csv,noheader,nounits"},
			"GPU-aaaa, 23028\nGPU-cccc, 40960\n"},
		{[]string{"--format=csv,nounits", "--query-gpu=memory.total,index"},
			"memory.total, index\n23028, 0\n40960, 1\n"},
		{[]string{"--query-gpu", "uuid", "--format", "csv,noheader"},
			"GPU-aaaa\nGPU-cccc\n"},
	} {
		out, code := run(t, nodes, tp, tc.args...)
		if code != 0 || out != tc.want {
			t.Errorf("%v = %d %q, want 0 %q", tc.args, code, out, tc.want)
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	tp := writeTable(t)
	nodes := map[string]DevInfo{"nvidiactl": ctl, "nvidia0": gpu(0)}
	for _, args := range [][]string{
		{"-q"},
		{"--bogus"},
		{"-L", "-x"},
		{"-L", "--query-gpu=uuid", "--format=csv"},
		{"--query-gpu=uuid"}, // no --format
		{"--format=csv"},     // no --query-gpu
		{"--query-gpu=uuid,temperature.gpu", "--format=csv"},
		{"--query-gpu=uuid", "--format=xml"},
		{"--query-gpu=uuid", "--format=csv,pretty"},
		{"--query-gpu"},
	} {
		out, code := run(t, nodes, tp, args...)
		if code != ExitInvalidArg || out == "" {
			t.Errorf("%v = %d %q, want exit 2 with a message", args, code, out)
		}
	}
}

func TestDriverFailures(t *testing.T) {
	tp := writeTable(t)
	noDriver := msgNoDriver + "\n"

	out, code := run(t, map[string]DevInfo{"nvidia0": gpu(0)}, tp, "-L")
	if code != 9 || out != noDriver {
		t.Errorf("no nvidiactl: %d %q", code, out)
	}
	out, code = run(t, map[string]DevInfo{"nvidiactl": {CharDev: true, Major: 1, Minor: 255}, "nvidia0": gpu(0)}, tp, "-L")
	if code != 9 || out != noDriver {
		t.Errorf("nvidiactl of another major: %d %q", code, out)
	}

	out, code = run(t, map[string]DevInfo{"nvidiactl": ctl, "nvidia0": gpu(0)}, filepath.Join(t.TempDir(), "absent.json"), "-L")
	if code != 9 || out != noDriver {
		t.Errorf("no table: %d %q", code, out)
	}

	out, code = run(t, map[string]DevInfo{"nvidiactl": ctl, "nvidia0": gpu(0), "nvidia5": gpu(5)}, tp, "-L")
	if code != 9 || !strings.Contains(out, "minor number 5") || strings.Contains(out, "GPU-aaaa") {
		t.Errorf("minor without table entry: %d %q", code, out)
	}
}

func TestNoDevices(t *testing.T) {
	out, code := run(t, map[string]DevInfo{"nvidiactl": ctl}, writeTable(t), "-L")
	if code != 6 || out != "No devices were found\n" {
		t.Errorf("no GPU: %d %q", code, out)
	}
}

func TestRealStat(t *testing.T) {
	info, err := Stat("/dev/null")
	if err != nil {
		t.Skipf("no /dev/null: %v", err)
	}
	if !info.CharDev || info.Major != 1 || info.Minor != 3 {
		t.Errorf("Stat(/dev/null) = %+v, want char 1:3", info)
	}
	info, err = Stat(writeTable(t))
	if err != nil || info.CharDev {
		t.Errorf("Stat(regular file) = %+v, %v", info, err)
	}
}
