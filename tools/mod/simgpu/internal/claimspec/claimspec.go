// Package claimspec builds and writes the per-claim CDI spec of the simulated GPU driver.
//
// Naming and layout follow NVIDIA's DRA driver (github.com/NVIDIA/k8s-dra-driver-gpu,
// tag v0.4.0, cmd/gpu-kubelet-plugin/cdi.go); the content is what a container needs to
// see a simulated GPU: its /dev/nvidia<minor> node, /dev/nvidiactl, and our nvidia-smi.
package claimspec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"ck8s-gpu.local/tools/simgpu/internal/atomicfile"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

const (
	// cdi.go (v0.4.0): cdiVendor = "k8s." + DriverName, cdiClaimClass = "claim".
	Vendor = "k8s.gpu.nvidia.com"
	Class  = "claim"
	Kind   = Vendor + "/" + Class

	// NVIDIA's kernel driver: character major 195, /dev/nvidiactl is minor 255.
	NvidiaMajor = 195
	CtlMinor    = 255

	// Where the container finds our nvidia-smi and the GPU table it reads.
	ContainerNvidiaSMI = "/usr/bin/nvidia-smi"
	ContainerGPUTable  = "/run/nvidia-sim/gpus.json"

	// refusedVersion is not a CDI spec version: tags.cncf.io/container-device-interface
	// v1.1.0 (containerd v2.2's CDI cache) rejects it in specs-go/version.go
	// ValidateVersion ("invalid version"), called from pkg/cdi/spec.go (*Spec).validate when
	// the cache reads the file, so the claim's devices stay unresolvable.
	refusedVersion = "99.0.0"
)

// Fault is a test hook of this simulator (NVIDIA's driver has nothing like it): it makes
// prepare write a broken spec so a test can watch the failure surface.
type Fault string

const (
	NoFault     Fault = ""
	CDIRefused  Fault = "cdi-refused"  // spec the CDI cache refuses: container creation fails
	WrongDevice Fault = "wrong-device" // each device exposes the node's next GPU instead
	// Unhealthy simulates an NVML critical XID on the first allocated GPU (the plugin taints
	// it, cmd/ck8s-gpu-kubelet-plugin/health.go); the spec itself is unchanged.
	Unhealthy Fault = "unhealthy"
)

// ParseFault maps the fault file's content (trimmed) to a Fault.
func ParseFault(s string) (Fault, error) {
	switch f := Fault(strings.TrimSpace(s)); f {
	case NoFault, CDIRefused, WrongDevice, Unhealthy:
		return f, nil
	default:
		return NoFault, fmt.Errorf("unknown fault %q (want %q, %q or %q)", f, CDIRefused, WrongDevice, Unhealthy)
	}
}

// ReadFault reads the fault file; absent or empty means no fault.
func ReadFault(path string) (Fault, error) {
	if path == "" {
		return NoFault, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return NoFault, nil
	}
	if err != nil {
		return NoFault, err
	}
	return ParseFault(string(data))
}

// HostPaths are the host files the spec points containers at.
type HostPaths struct {
	DevDir    string // holds nvidia<minor> and nvidiactl
	NvidiaSMI string // the simulated nvidia-smi binary
	GPUTable  string // <state-dir>/gpus.json
}

// Allocated is one device of the claim that this node prepares.
type Allocated struct {
	Device string   // DRA device name, e.g. gpu-0 or gpu-0-mig-1g10gb-19-0
	Minor  uint32   // the GPU's, a MIG device's parent's
	Caps   []uint32 // a MIG device's GI and CI nvidia-caps minors; none for a whole GPU
}

// DeviceName is the claim-specific CDI device name: "<claim UID>-<device name>"
// (cdi.go CreateClaimSpecFile / GetClaimDeviceName: fmt.Sprintf("%s-%s", claimUID, dev.CanonicalName())).
func DeviceName(claimUID, device string) string {
	return claimUID + "-" + device
}

// QualifiedName is the fully-qualified CDI device ID returned to the kubelet, e.g.
// k8s.gpu.nvidia.com/claim=<uid>-gpu-0 (cdi.go GetClaimDeviceName, via CDI's parser.QualifiedName).
func QualifiedName(claimUID, device string) string {
	return Kind + "=" + DeviceName(claimUID, device)
}

// FileName is the claim's transient spec file name: "<vendor>-<class>_<claim UID>.yaml"
// (cdi.go: cdiapi.GenerateTransientSpecName(cdiVendor, cdiClaimClass, claimUID) + ".yaml";
// pkg/cdi/spec.go GenerateTransientSpecName replaces "/" in the ID with "_").
func FileName(claimUID string) string {
	return Vendor + "-" + Class + "_" + strings.ReplaceAll(claimUID, "/", "_") + ".yaml"
}

// Build returns the claim's CDI spec: one CDI device per allocated device, carrying that
// GPU's /dev/nvidia<minor> node; claim-wide edits (/dev/nvidiactl, nvidia-smi, the GPU table,
// NVIDIA_VISIBLE_DEVICES=void) sit at spec level as NVIDIA's common edits do (cdi.go:
// spec.WithEdits(commonEdits)); CDI applies them once any device of the spec is injected.
// nodeMinors are all GPU minors of the node; WrongDevice picks the next one (wrapping).
func Build(claimUID string, devs []Allocated, nodeMinors []uint32, p HostPaths, fault Fault) (*cdispec.Spec, error) {
	if len(devs) == 0 {
		return nil, errors.New("no devices to prepare")
	}
	spec := &cdispec.Spec{
		Kind: Kind,
		ContainerEdits: cdispec.ContainerEdits{
			// nvcdi's GetCommonEdits (nvidia-container-toolkit v1.19.0 pkg/nvcdi/wrapper.go,
			// vendored by v0.4.0) appends NVIDIA_VISIBLE_DEVICES=void: CDI, not the env, picks
			// the GPUs. The UUIDs are deliberately not in the environment.
			Env:         []string{"NVIDIA_VISIBLE_DEVICES=void"},
			DeviceNodes: []*cdispec.DeviceNode{charDev("/dev/nvidiactl", filepath.Join(p.DevDir, "nvidiactl"), NvidiaMajor, CtlMinor)},
			Mounts: []*cdispec.Mount{
				roBind(p.NvidiaSMI, ContainerNvidiaSMI),
				roBind(p.GPUTable, ContainerGPUTable),
			},
		},
	}
	for _, d := range devs {
		minor := d.Minor
		if fault == WrongDevice {
			minor = nextMinor(minor, nodeMinors)
		}
		node := fmt.Sprintf("nvidia%d", minor)
		nodes := []*cdispec.DeviceNode{charDev("/dev/"+node, filepath.Join(p.DevDir, node), NvidiaMajor, minor)}
		for _, c := range d.Caps {
			capNode := fmt.Sprintf("nvidia-caps/nvidia-cap%d", c)
			nodes = append(nodes, charDev("/dev/"+capNode, filepath.Join(p.DevDir, capNode), gputable.CapsMajor, c))
		}
		spec.Devices = append(spec.Devices, cdispec.Device{
			Name:           DeviceName(claimUID, d.Device),
			ContainerEdits: cdispec.ContainerEdits{DeviceNodes: nodes},
		})
	}
	// NVIDIA's spec builder (nvidia-container-toolkit pkg/nvcdi/spec/builder.go) saves with the
	// minimum CDI version the content needs, so older CDI readers accept the file.
	v, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, err
	}
	spec.Version = v
	if fault == CDIRefused {
		spec.Version = refusedVersion
	}
	return spec, nil
}

// nextMinor is the minor after m among the node's minors, wrapping to the first.
// With one GPU on the node it is m itself: the fault then changes nothing.
func nextMinor(m uint32, nodeMinors []uint32) uint32 {
	best, first := m, m
	haveBest, haveFirst := false, false
	for _, n := range nodeMinors {
		if !haveFirst || n < first {
			first, haveFirst = n, true
		}
		if n > m && (!haveBest || n < best) {
			best, haveBest = n, true
		}
	}
	if haveBest {
		return best
	}
	return first
}

// charDev mirrors what nvcdi emits for an NVIDIA device node (internal/edits/device.go:
// path, host path, type c, major/minor, permissions "rwm").
func charDev(path, hostPath string, major, minor uint32) *cdispec.DeviceNode {
	return &cdispec.DeviceNode{
		Path:        path,
		HostPath:    hostPath,
		Type:        "c",
		Major:       int64(major),
		Minor:       int64(minor),
		Permissions: "rwm",
	}
}

// roBind uses the options nvcdi gives driver binaries such as nvidia-smi
// (internal/discover/mounts.go: ro, nosuid, nodev, rbind, rprivate).
func roBind(hostPath, containerPath string) *cdispec.Mount {
	return &cdispec.Mount{
		HostPath:      hostPath,
		ContainerPath: containerPath,
		Options:       []string{"ro", "nosuid", "nodev", "rbind", "rprivate"},
	}
}

// Write stores the claim's spec in dir atomically (temp file + rename), so the CDI cache
// never reads half a file. Writing the same claim again replaces it (prepare is idempotent).
func Write(dir, claimUID string, spec *cdispec.Spec) (string, error) {
	path := filepath.Join(dir, FileName(claimUID))
	return path, WriteFile(path, spec)
}

// WriteFile stores any driver's CDI spec at path atomically (the compute-domain simulator's too).
func WriteFile(path string, spec *cdispec.Spec) error {
	data, err := yaml.Marshal(spec)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}

// Remove deletes the claim's spec; a missing file is not an error (cdi.go DeleteClaimSpecFile).
func Remove(dir, claimUID string) error {
	return RemoveFile(filepath.Join(dir, FileName(claimUID)))
}

// RemoveFile deletes a spec file; a missing one is not an error.
func RemoveFile(path string) error {
	err := os.Remove(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
