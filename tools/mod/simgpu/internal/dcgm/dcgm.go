// Package dcgm renders the metrics of the simulated DCGM exporter: the names, help texts, labels
// and label order of NVIDIA's dcgm-exporter 4.6.0-4.8.3 (the GPU Operator v26.7.0 pin,
// deployments/gpu-operator/values.yaml dcgmExporter.version), for the fields the utilization
// report reads. Sources (github.com/NVIDIA/dcgm-exporter at 7ad5832, the head of its 4.6.0-4.8.3
// release):
//   - etc/dcp-metrics-included.csv, the counters the operator loads
//     (DCGM_EXPORTER_COLLECTORS, gpu-operator assets/state-dcgm-exporter/0800_daemonset.yaml):
//     DCGM_FI_DEV_GPU_UTIL "GPU utilization (in %).", DCGM_FI_PROF_GR_ENGINE_ACTIVE "Ratio of time
//     the graphics engine is active.", DCGM_FI_DEV_FB_USED "Framebuffer memory used (in MiB).",
//     all gauges; DCGM_FI_DRIVER_VERSION is a label field.
//   - internal/pkg/rendermetrics/render_metrics.go: labels gpu, UUID, pci_bus_id, device,
//     modelName, GPU_I_PROFILE and GPU_I_ID for a GPU instance, hostname (lower case since 4.8.3),
//     the label fields, then the attributes (pod mapping) in sorted order.
//   - internal/pkg/devicemonitoring/device_monitoring.go: a GPU in MIG mode is watched as its GPU
//     instances only, each series carrying its parent's gpu and UUID; DCGM_FI_DEV_GPU_UTIL is not
//     reported for an instance (NVIDIA/dcgm-exporter#216: use the profiling field).
//   - internal/pkg/transformation/const.go and kubernetes.go (DRA): an allocated device's series is
//     repeated once per (pod, container) holding it, with pod, namespace, container and the
//     dra_claim_name, dra_claim_namespace, dra_driver_name, dra_pool_name, dra_device_name
//     attributes, plus dra_mig_profile and dra_mig_device_uuid for a MIG device.
//
// Standard library only; what a GPU is doing is the simulator's input (Holder.Activity).
package dcgm

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

// Holder is one container holding a device through a ResourceClaim (the kubelet's pod-resources
// List: ContainerResources.DynamicResources[].ClaimResources[]).
type Holder struct {
	Pod, Namespace, Container string
	ClaimName, ClaimNamespace string
	Driver, Pool, Device      string
	// Activity is what the simulated GPU is doing for this holder, 0..1 (the pod declares it:
	// cmd/ck8s-sim-dcgm-exporter reads its annotation).
	Activity float64
}

// Entity is one monitored unit: a GPU not in MIG mode, or one GPU instance of a GPU in MIG mode.
type Entity struct {
	GPU gputable.GPU
	MIG *gputable.MIG // nil for a whole GPU
}

// Key is how holders find their entity: a whole GPU's UUID, a MIG device's MIG UUID.
func (e Entity) Key() string {
	if e.MIG != nil {
		return e.MIG.UUID
	}
	return e.GPU.UUID
}

// Entities lists what the exporter watches on the node, in table order: each GPU not in MIG mode,
// and each GPU instance of the others.
func Entities(t gputable.Table) []Entity {
	var out []Entity
	for _, g := range t.GPUs {
		migs := t.MIGOf(g.Minor)
		if len(migs) == 0 {
			out = append(out, Entity{GPU: g})
			continue
		}
		for i := range migs {
			out = append(out, Entity{GPU: g, MIG: &migs[i]})
		}
	}
	return out
}

type metric struct{ name, help string }

var (
	gpuUtil  = metric{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."}
	grEngine = metric{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active."}
	fbUsed   = metric{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."}
)

type label struct{ k, v string }

func base(e Entity, hostname, driverVersion string) []label {
	g := e.GPU
	ls := []label{
		{"gpu", fmt.Sprint(g.Index)},
		{"UUID", g.UUID},
		// The simulated GPUs have no PCI address; one per minor keeps the label's shape.
		{"pci_bus_id", fmt.Sprintf("00000000:%02X:00.0", g.Minor+1)},
		{"device", fmt.Sprintf("nvidia%d", g.Minor)},
		{"modelName", g.ProductName},
	}
	if e.MIG != nil {
		ls = append(ls, label{"GPU_I_PROFILE", e.MIG.Profile}, label{"GPU_I_ID", fmt.Sprint(e.MIG.GI)})
	}
	return append(ls, label{"hostname", hostname}, label{"DCGM_FI_DRIVER_VERSION", driverVersion})
}

func attributes(e Entity, h Holder) []label {
	ls := []label{
		{"container", h.Container}, {"dra_claim_name", h.ClaimName}, {"dra_claim_namespace", h.ClaimNamespace},
		{"dra_device_name", h.Device}, {"dra_driver_name", h.Driver}, {"dra_pool_name", h.Pool},
		{"namespace", h.Namespace}, {"pod", h.Pod},
	}
	if e.MIG != nil {
		ls = append(ls, label{"dra_mig_device_uuid", e.MIG.UUID}, label{"dra_mig_profile", e.MIG.Profile})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].k < ls[j].k })
	return ls
}

func escape(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

func series(b *strings.Builder, name string, ls []label, value string) {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf(`%s="%s"`, l.k, escape(l.v))
	}
	fmt.Fprintf(b, "%s{%s} %s\n", name, strings.Join(parts, ","), value)
}

// Activity of an entity: what its holders do together, at most the whole device (time-sliced
// holders share it).
func Activity(holders []Holder) float64 {
	sum := 0.0
	for _, h := range holders {
		sum += math.Max(0, h.Activity)
	}
	return math.Min(1, sum)
}

// Render is the /metrics body: every entity's series, once per holder when held (the attributes
// of that holder added), once without attributes when not.
func Render(hostname, driverVersion string, t gputable.Table, holders map[string][]Holder) string {
	type row struct {
		labels []label
		e      Entity
		active float64
	}
	var rows []row
	for _, e := range Entities(t) {
		hs := holders[e.Key()]
		active := Activity(hs)
		if len(hs) == 0 {
			rows = append(rows, row{base(e, hostname, driverVersion), e, active})
		}
		for _, h := range hs {
			rows = append(rows, row{append(base(e, hostname, driverVersion), attributes(e, h)...), e, active})
		}
	}
	var b strings.Builder
	for _, m := range []metric{gpuUtil, grEngine, fbUsed} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", m.name, m.help, m.name)
		for _, r := range rows {
			switch m {
			case gpuUtil:
				if r.e.MIG == nil { // not reported for a GPU instance
					series(&b, m.name, r.labels, fmt.Sprint(math.Round(r.active*100)))
				}
			case grEngine:
				series(&b, m.name, r.labels, fmt.Sprintf("%.6f", r.active))
			case fbUsed:
				series(&b, m.name, r.labels, fmt.Sprint(fbUsedMiB(r.e, r.active)))
			}
		}
	}
	return b.String()
}

// fbUsedMiB: a busy device holds memory in proportion to its activity (the simulator's choice; the
// report does not read it). A GPU instance owns its share of the GPU's memory slices.
func fbUsedMiB(e Entity, active float64) int64 {
	total := e.GPU.MemoryMiB
	if e.MIG != nil {
		total = total * int64(e.MIG.MemorySlices) / 8
	}
	return int64(math.Round(float64(total) * active))
}
