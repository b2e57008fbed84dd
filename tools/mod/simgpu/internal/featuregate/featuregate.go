// Package featuregate parses the --feature-gates flag the way NVIDIA's GPU kubelet plugin
// does (driver 0.5: pkg/featuregates/featuregates.go registers its gates with
// k8s.io/component-base/featuregate; pkg/flags/featuregates.go binds them to --feature-gates).
// Only the gates this simulator models may be turned away from their default.
package featuregate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Feature is a gate name.
type Feature string

const (
	FabricManagerPartitioning Feature = "FabricManagerPartitioning"
	NVMLDeviceHealthCheck     Feature = "NVMLDeviceHealthCheck"
)

type spec struct {
	def       bool
	simulated bool // the simulator implements the gate's on and off behaviour
}

// known is defaultFeatureGates of pkg/featuregates/featuregates.go (driver 0.5): name -> default.
var known = map[Feature]spec{
	"TimeSlicingSettings":       {def: false},
	"MPSSupport":                {def: false},
	"IMEXDaemonsWithDNSNames":   {def: true},
	"PassthroughSupport":        {def: false},
	NVMLDeviceHealthCheck:       {def: false, simulated: true},
	"DynamicMIG":                {def: false},
	"ComputeDomainCliques":      {def: true},
	"CrashOnNVLinkFabricErrors": {def: true},
	"DeviceMetadata":            {def: false},
	FabricManagerPartitioning:   {def: false, simulated: true},
	"HostManagedIMEXDaemon":     {def: false},
	"DRAListTypeAttributes":     {def: false},
	"ConsumableShares":          {def: false},
}

// Gates holds the parsed values; unset gates have their default.
type Gates struct{ set map[Feature]bool }

// Enabled reports the gate's value (its default unless set).
func (g Gates) Enabled(f Feature) bool {
	if v, ok := g.set[f]; ok {
		return v
	}
	return known[f].def
}

// Parse reads "Name=true,Name2=false" as component-base's featureGate.SetWithLogger does
// (featuregate/feature_gate.go: empty items skipped, key and value trimmed, strconv.ParseBool,
// "missing bool value for", "invalid value of", then unsafeSetFromMap's "unrecognized feature
// gate: "). A known gate this simulator does not model is refused when set off its default,
// rather than accepted and silently ignored.
func Parse(value string) (Gates, error) {
	m := map[Feature]bool{}
	for _, s := range strings.Split(value, ",") {
		if len(s) == 0 {
			continue
		}
		arr := strings.SplitN(s, "=", 2)
		k := strings.TrimSpace(arr[0])
		if len(arr) != 2 {
			return Gates{}, fmt.Errorf("missing bool value for %s", k)
		}
		v := strings.TrimSpace(arr[1])
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Gates{}, fmt.Errorf("invalid value of %s=%s, err: %v", k, v, err)
		}
		m[Feature(k)] = b
	}
	// Sorted, so the first offending gate named is stable (upstream ranges over a map).
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		s, ok := known[Feature(k)]
		if !ok {
			return Gates{}, fmt.Errorf("unrecognized feature gate: %s", k)
		}
		if !s.simulated && m[Feature(k)] != s.def {
			return Gates{}, fmt.Errorf("feature gate %s=%t is not simulated by ck8s-gpu-kubelet-plugin", k, m[Feature(k)])
		}
	}
	return Gates{set: m}, nil
}

// Known lists every gate name upstream registers, sorted.
func Known() []string {
	out := make([]string, 0, len(known))
	for k := range known {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}
