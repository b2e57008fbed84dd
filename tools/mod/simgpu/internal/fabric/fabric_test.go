package fabric

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hgx is the HGX 8-GPU default layout tools/dra_publisher.py hgx_8gpu_partitions returns.
var hgx = Table{Partitions: []Partition{
	{0, []int{1, 2, 3, 4, 5, 6, 7, 8}}, {1, []int{1, 2, 3, 4}}, {2, []int{5, 6, 7, 8}},
	{3, []int{1, 3}}, {4, []int{2, 4}}, {5, []int{5, 7}}, {6, []int{6, 8}},
	{7, []int{1}}, {8, []int{2}}, {9, []int{3}}, {10, []int{4}},
	{11, []int{5}}, {12, []int{6}}, {13, []int{7}}, {14, []int{8}},
}}

func TestResolveExactMatchOnly(t *testing.T) {
	if err := hgx.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mods []int
		id   int
	}{{[]int{8, 7, 6, 5, 4, 3, 2, 1}, 0}, {[]int{4, 2, 1, 3}, 1}, {[]int{3, 1}, 3}, {[]int{6}, 12}} {
		got, err := hgx.Resolve(c.mods)
		if err != nil || got != c.id {
			t.Errorf("Resolve(%v) = %d, %v; want %d", c.mods, got, err, c.id)
		}
	}
	// A subset, a superset, a split group and nothing all fail.
	for _, mods := range [][]int{{1, 2}, {1, 2, 3}, {1, 2, 5, 6}, {1, 2, 3, 4, 5}, nil} {
		_, err := hgx.Resolve(mods)
		if err == nil || !strings.Contains(err.Error(), "does not match any FM partition") {
			t.Errorf("Resolve(%v) = %v, want a no-partition error", mods, err)
		}
	}
}

func TestValidateRefusesMalformedTables(t *testing.T) {
	for want, tab := range map[string]Table{
		"duplicate partitionId 1":        {Partitions: []Partition{{1, []int{1}}, {1, []int{2}}}},
		"partition 2 has no GPUs":        {Partitions: []Partition{{2, nil}}},
		"references gpuModuleID 3 twice": {Partitions: []Partition{{0, []int{3, 3}}}},
	} {
		if err := tab.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
}

func TestLoadStrict(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"partitions":[{"id":7,"gpuModuleIDs":[1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(good)
	if err != nil || len(tab.Partitions) != 1 || tab.Partitions[0].ID != 7 {
		t.Fatalf("Load = %+v, %v", tab, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"partitions":[{"id":7,"gpus":[1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil {
		t.Fatal("unknown field accepted")
	}
}
