package featuregate

import (
	"strings"
	"testing"
)

func TestParseDefaultsAndValues(t *testing.T) {
	g, err := Parse("")
	if err != nil {
		t.Fatal(err)
	}
	if g.Enabled(FabricManagerPartitioning) || g.Enabled(NVMLDeviceHealthCheck) {
		t.Fatal("alpha gates must default off")
	}
	if !g.Enabled("ComputeDomainCliques") {
		t.Fatal("beta gate ComputeDomainCliques defaults on upstream")
	}
	g, err = Parse(" FabricManagerPartitioning = true,,NVMLDeviceHealthCheck=1,ComputeDomainCliques=true")
	if err != nil {
		t.Fatal(err)
	}
	if !g.Enabled(FabricManagerPartitioning) || !g.Enabled(NVMLDeviceHealthCheck) {
		t.Fatalf("gates not enabled: %+v", g)
	}
	g, _ = Parse("FabricManagerPartitioning=false")
	if g.Enabled(FabricManagerPartitioning) {
		t.Fatal("explicit false ignored")
	}
}

func TestParseRefusesLikeComponentBase(t *testing.T) {
	for in, want := range map[string]string{
		"FabricManagerPartitioning":             "missing bool value for FabricManagerPartitioning",
		"FabricManagerPartitioning=maybe":       "invalid value of FabricManagerPartitioning=maybe",
		"FabricManagerPartition=true":           "unrecognized feature gate: FabricManagerPartition",
		"NVMLDeviceHealthCheck=true,Nope=false": "unrecognized feature gate: Nope",
		"DynamicMIG=true":                       "DynamicMIG=true is not simulated",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want error containing %q", in, err, want)
		}
	}
	// A non-simulated gate at its default is what upstream accepts and we behave as: fine.
	if _, err := Parse("DynamicMIG=false,CrashOnNVLinkFabricErrors=true"); err != nil {
		t.Fatal(err)
	}
}
