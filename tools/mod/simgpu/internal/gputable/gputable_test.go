package gputable

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestWriteReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpus.json")
	in := Table{GPUs: []GPU{
		{Index: 1, Minor: 3, UUID: "GPU-b", ProductName: "NVIDIA L4", MemoryMiB: 23028},
		{Index: 0, Minor: 0, UUID: "GPU-a", ProductName: "NVIDIA L4", MemoryMiB: 23028},
	}}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644 (containers read it)", fi.Mode().Perm())
	}
	out, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
	if g, ok := out.ByMinor(3); !ok || g.UUID != "GPU-b" {
		t.Errorf("ByMinor(3) = %+v, %v", g, ok)
	}
	if _, ok := out.ByMinor(1); ok {
		t.Error("ByMinor(1) found a GPU that is not in the table")
	}
	if got := out.Minors(); !reflect.DeepEqual(got, []uint32{0, 3}) {
		t.Errorf("Minors() = %v, want [0 3]", got)
	}
	// No temp file is left next to it.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("dir has %d entries, want only gpus.json", len(entries))
	}
}

func TestReadRejectsBadTables(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage":   "not json",
		"no-uuid":   `{"gpus":[{"minor":0}]}`,
		"dup-minor": `{"gpus":[{"minor":0,"uuid":"GPU-a"},{"minor":0,"uuid":"GPU-b"}]}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); err == nil {
			t.Errorf("%s: Read accepted %q", name, content)
		}
	}
	if _, err := Read(filepath.Join(dir, "absent")); err == nil {
		t.Error("Read of a missing file succeeded")
	}
	if err := Write(filepath.Join(dir, "w"), Table{GPUs: []GPU{{Minor: 1}}}); err == nil {
		t.Error("Write accepted a GPU without uuid")
	}
}
