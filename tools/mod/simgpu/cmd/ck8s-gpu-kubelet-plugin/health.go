package main

import (
	"slices"

	resourceapi "k8s.io/api/resource/v1"
)

// The taint NVIDIA's driver 0.5 puts on a GPU after a fatal XID (cmd/gpu-kubelet-plugin/
// device_health.go: TaintKeyXID = DriverName + "/xid"; healthEventToTaint: value = the XID,
// effect NoSchedule unless the XID is one xidsToSkip ignores). XID 48 is a double-bit ECC
// error, not in the ignored list (13, 31, 43, 45, 68, 109).
const (
	taintKeyXID  = driverName + "/xid"
	simulatedXID = "48"
)

func xidTaint() resourceapi.DeviceTaint {
	return resourceapi.DeviceTaint{Key: taintKeyXID, Value: simulatedXID, Effect: resourceapi.DeviceTaintEffectNoSchedule}
}

// addOrUpdateTaint returns devs with device `name` carrying taint, and whether anything
// changed: allocatable.go AddOrUpdateTaint (one taint per key; same value and effect is no
// change; a changed one is overwritten with TimeAdded cleared for the API server to set).
// devs is not modified.
func addOrUpdateTaint(devs []resourceapi.Device, name string, taint resourceapi.DeviceTaint) ([]resourceapi.Device, bool) {
	i := slices.IndexFunc(devs, func(d resourceapi.Device) bool { return d.Name == name })
	if i < 0 {
		return devs, false
	}
	taints := slices.Clone(devs[i].Taints)
	j := slices.IndexFunc(taints, func(t resourceapi.DeviceTaint) bool { return t.Key == taint.Key })
	switch {
	case j >= 0 && taints[j].Value == taint.Value && taints[j].Effect == taint.Effect:
		return devs, false
	case j >= 0:
		taints[j].Value, taints[j].Effect, taints[j].TimeAdded = taint.Value, taint.Effect, nil
	default:
		taints = append(taints, taint)
	}
	out := slices.Clone(devs)
	out[i].Taints = taints
	return out, true
}
