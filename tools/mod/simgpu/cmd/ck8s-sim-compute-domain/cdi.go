package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"ck8s-gpu.local/tools/simgpu/internal/claimspec"
)

// cmd/compute-domain-kubelet-plugin/cdi.go: cdiVendor = "k8s." + DriverName, cdiClaimClass = "claim".
const (
	cdiVendor     = "k8s." + driverName
	cdiClaimClass = "claim"
	cdiClaimKind  = cdiVendor + "/" + cdiClaimClass
)

// channelDevicePath is nvlib.go getNVCapIMEXChannelDeviceInfo's Path.
func channelDevicePath(id int) string {
	return fmt.Sprintf("/dev/nvidia-caps-imex-channels/channel%d", id)
}

// channelDeviceNode is internal/common/nvcaps.go CDICharDevNode for channel `id`: type c, mode 0666,
// major from /proc/devices, minor = channel ID, and no hostPath. CDI then takes the node as
// minimally specified (container-device-interface pkg/cdi/container-edits_unix.go fillMissingInfo:
// type and major set, so no host node is stat'ed) and runc makes it in the container.
func channelDeviceNode(major, id int) *cdispec.DeviceNode {
	mode := os.FileMode(0o666)
	return &cdispec.DeviceNode{Path: channelDevicePath(id), Type: "c", FileMode: &mode, Major: int64(major), Minor: int64(id)}
}

// channelEdits is device_state.go applyComputeDomainChannelConfigDriverManaged's edits: channel 0,
// or channels 0..2047 for allocationMode All.
func channelEdits(major int, mode string) cdispec.ContainerEdits {
	n := 1
	if mode == allocationModeAll {
		n = maxImexChannelCount
	}
	var e cdispec.ContainerEdits
	for id := range n {
		e.DeviceNodes = append(e.DeviceNodes, channelDeviceNode(major, id))
	}
	return e
}

// cdiDeviceName is cdi.go CreateClaimSpecFile's per-device name "<claimUID>-<canonical name>".
func cdiDeviceName(claimUID, device string) string { return claimUID + "-" + device }

// qualifiedDeviceID is cdi.go GetClaimDevice (cdiparser.QualifiedName(vendor, class, name)).
func qualifiedDeviceID(claimUID, device string) string {
	return cdiClaimKind + "=" + cdiDeviceName(claimUID, device)
}

// specFileName is cdiapi.GenerateTransientSpecName(cdiVendor, cdiClaimClass, claimUID) plus the
// cache's default ".yaml" (container-device-interface pkg/cdi/spec.go, cache.go WriteSpec).
func specFileName(claimUID string) string {
	return cdiVendor + "-" + cdiClaimClass + "_" + strings.ReplaceAll(claimUID, "/", "_") + ".yaml"
}

// claimSpec is cdi.go CreateClaimSpecFile: one CDI device per prepared device that has edits, at the
// minimum CDI version the content needs; nil when no device has edits (upstream writes no file).
func claimSpec(claimUID string, edits map[string]cdispec.ContainerEdits) (*cdispec.Spec, error) {
	spec := &cdispec.Spec{Kind: cdiClaimKind}
	for _, dev := range sortedKeys(edits) {
		spec.Devices = append(spec.Devices, cdispec.Device{Name: cdiDeviceName(claimUID, dev), ContainerEdits: edits[dev]})
	}
	if len(spec.Devices) == 0 {
		return nil, nil
	}
	v, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("failed to get minimum required CDI spec version: %w", err)
	}
	spec.Version = v
	return spec, nil
}

func writeClaimSpec(dir, claimUID string, spec *cdispec.Spec) (string, error) {
	path := filepath.Join(dir, specFileName(claimUID))
	return path, claimspec.WriteFile(path, spec)
}

// removeClaimSpec is cdi.go DeleteClaimSpecFileIfExists.
func removeClaimSpec(dir, claimUID string) error {
	return claimspec.RemoveFile(filepath.Join(dir, specFileName(claimUID)))
}
