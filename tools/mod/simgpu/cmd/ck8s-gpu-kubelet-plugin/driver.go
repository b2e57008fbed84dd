package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"ck8s-gpu.local/tools/simgpu/internal/claimspec"
	"ck8s-gpu.local/tools/simgpu/internal/fabric"
	"ck8s-gpu.local/tools/simgpu/internal/featuregate"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

// driverName as in NVIDIA's cmd/gpu-kubelet-plugin/main.go (v0.4.0).
const driverName = "gpu.nvidia.com"

// driver implements kubeletplugin.DRAPlugin. The helper serializes prepare and unprepare
// (its default), which stands in for NVIDIA's node-global pu.lock (driver.go).
type driver struct {
	nodeName  string
	cdiDir    string
	faultFile string
	paths     claimspec.HostPaths
	minors    map[string]uint32       // device name -> minor, this node's whole GPUs
	mig       map[string]gputable.MIG // device name -> instance, this node's MIG devices
	allMinors []uint32
	gates     featuregate.Gates
	// fabric is nil where upstream has no Fabric Manager (gate off, or no fabric on the node:
	// device_state.go newFabricManager), which turns partition checks off.
	fabric    *fabric.Table
	moduleIDs map[string]int // device name -> gpuModuleID

	mu      sync.Mutex
	devices []resourceapi.Device // what is published now, taints included
	publish func(context.Context, []resourceapi.Device) error
}

var _ kubeletplugin.DRAPlugin = (*driver)(nil)

func (d *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	res := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		res[c.UID] = d.prepare(ctx, c)
	}
	return res, nil
}

// prepare writes the claim's CDI spec and returns its device IDs. It is rerun in full on
// every call (the fault file is read each time); rewriting the same spec is idempotent.
// Device selection follows NVIDIA's device_state.go prepareDevices (results of our driver);
// we also require our pool, since one process serves exactly one node.
func (d *driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	uid := string(claim.UID)
	fail := func(err error) kubeletplugin.PrepareResult {
		klog.ErrorS(err, "Prepare failed", "claim", klog.KObj(claim), "uid", uid)
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)}
	}
	if claim.Status.Allocation == nil {
		return fail(fmt.Errorf("claim not yet allocated"))
	}
	fault, err := claimspec.ReadFault(d.faultFile)
	if err != nil {
		return fail(fmt.Errorf("fault file: %w", err))
	}

	var allocated []claimspec.Allocated
	var devices []kubeletplugin.Device
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != driverName || r.Pool != d.nodeName {
			continue
		}
		a, ok := d.allocated(r.Device)
		if !ok {
			return fail(fmt.Errorf("device %q is not on node %s", r.Device, d.nodeName))
		}
		allocated = append(allocated, a)
		devices = append(devices, kubeletplugin.Device{
			Requests:     []string{r.Request},
			PoolName:     r.Pool,
			DeviceName:   r.Device,
			CDIDeviceIDs: []string{claimspec.QualifiedName(uid, r.Device)},
		})
	}
	if len(allocated) == 0 {
		klog.InfoS("Claim has no device of this node", "claim", klog.KObj(claim))
		return kubeletplugin.PrepareResult{}
	}
	if fault == claimspec.Unhealthy {
		// The health event arrives while the claim is being prepared; upstream's prepare
		// never looks at taints (device_state.go prepareDevices), so this one goes on.
		d.markUnhealthy(ctx, allocated[0].Device)
	}
	if d.gates.Enabled(featuregate.FabricManagerPartitioning) && d.fabric != nil {
		names := make([]string, len(allocated))
		for i, a := range allocated {
			names[i] = a.Device
		}
		id, err := claimPartition(*d.fabric, d.moduleIDs, names)
		if err != nil {
			return fail(err)
		}
		klog.InfoS("Fabric Manager: activating partition", "partition", id, "gpus", len(names), "claim", klog.KObj(claim))
	}

	spec, err := claimspec.Build(uid, allocated, d.allMinors, d.paths, fault)
	if err != nil {
		return fail(err)
	}
	path, err := claimspec.Write(d.cdiDir, uid, spec)
	if err != nil {
		return fail(fmt.Errorf("write CDI spec: %w", err))
	}
	klog.InfoS("Prepared claim", "claim", klog.KObj(claim), "uid", uid, "spec", path, "devices", len(devices), "fault", string(fault))
	return kubeletplugin.PrepareResult{Devices: devices}
}

// allocated is what a container gets for one device: a whole GPU's node, or a MIG device's
// parent node and its GI and CI capability nodes (cdi.go: the parent GPU's spec plus
// GetDevNodesForMigDevice's two nvidia-caps nodes).
func (d *driver) allocated(device string) (claimspec.Allocated, bool) {
	if minor, ok := d.minors[device]; ok {
		return claimspec.Allocated{Device: device, Minor: minor}, true
	}
	if m, ok := d.mig[device]; ok {
		return claimspec.Allocated{Device: device, Minor: m.ParentMinor, Caps: []uint32{m.GICapMinor, m.CICapMinor}}, true
	}
	return claimspec.Allocated{}, false
}

func (d *driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	res := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		err := claimspec.Remove(d.cdiDir, string(c.UID))
		if err != nil {
			klog.ErrorS(err, "Unprepare failed", "claim", c.String())
		} else {
			klog.InfoS("Unprepared claim", "claim", c.String())
		}
		res[c.UID] = err
	}
	return res, nil
}

// markUnhealthy is driver.go deviceHealthEvents for one XID event on device: taint it and,
// if that changed the taint set, republish the whole slice with every device's taints. With
// NVMLDeviceHealthCheck off upstream runs no health monitor, so nothing happens. A failed
// publish is only logged, not retried: the taint stays in memory (driver.go's NOTE on it).
func (d *driver) markUnhealthy(ctx context.Context, device string) {
	if !d.gates.Enabled(featuregate.NVMLDeviceHealthCheck) {
		klog.InfoS("Health event ignored: feature gate NVMLDeviceHealthCheck is off", "device", device)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	taint := xidTaint()
	devs, changed := addOrUpdateTaint(d.devices, device, taint)
	klog.InfoS("Received xid health event for device", "device", device, "xid", taint.Value, "changed", changed)
	if !changed {
		return
	}
	d.devices = devs
	if d.publish == nil {
		klog.ErrorS(errors.New("kubelet plugin helper not started"), "Failed to publish resources after taint update")
		return
	}
	if err := d.publish(ctx, devs); err != nil {
		klog.ErrorS(err, "Failed to publish resources after taint update")
		return
	}
	klog.InfoS("Republished ResourceSlice with tainted device", "device", device, "key", taint.Key, "value", taint.Value, "effect", taint.Effect)
}

// HandleError follows the DRAPlugin docs (as NVIDIA's driver.go does).
func (d *driver) HandleError(ctx context.Context, err error, msg string) {
	runtime.HandleErrorWithContext(ctx, err, msg)
}
