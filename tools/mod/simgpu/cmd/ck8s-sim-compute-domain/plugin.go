package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// faultNoIMEXChannel is a test hook of this simulator (NVIDIA's driver has none): prepare succeeds
// but injects no channel, the way upstream does on a node without a clique ID
// (device_state.go applyComputeDomainChannelConfigDriverManaged: "Do not inject IMEX channel
// device nodes"): the container starts without /dev/nvidia-caps-imex-channels.
const faultNoIMEXChannel = "no-imex-channel"

func readFault(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	switch f := strings.TrimSpace(string(data)); f {
	case "", faultNoIMEXChannel:
		return f, nil
	default:
		return "", fmt.Errorf("unknown fault %q (want %q)", f, faultNoIMEXChannel)
	}
}

type preparedClaim struct {
	domainID string
	channels []int
}

// plugin is the compute-domain.nvidia.com kubelet plugin of one node in driver-managed IMEX mode
// (the chart's default), with the per-node IMEX daemon's part (joining the ComputeDomainClique)
// folded in: there is no IMEX here, so no daemon pod runs (see controller.go).
type plugin struct {
	c         *cluster
	nodeName  string
	namespace string // the driver's namespace, where the cliques live
	cliqueID  string // "<clusterUUID>.<cliqueID>" (nvlib.go getCliqueID) of this simulated fabric
	cdiDir    string
	faultFile string
	major     int

	mu       sync.Mutex // the helper serializes calls; this guards `prepared` against HandleError paths
	prepared map[types.UID]preparedClaim
}

var _ kubeletplugin.DRAPlugin = (*plugin)(nil)

func (p *plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devs, err := p.prepare(ctx, claim)
		if err != nil {
			klog.ErrorS(err, "Prepare failed", "claim", klog.KObj(claim), "uid", claim.UID)
			// driver.go nodePrepareResource's wording.
			err = fmt.Errorf("error preparing devices for claim '%s/%s:%s': %w", claim.Namespace, claim.Name, claim.UID, err)
		}
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devs, Err: err}
	}
	return out, nil
}

// prepare is device_state.go Prepare/prepareDevices for one claim.
func (p *plugin) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("no allocation set in ResourceClaim %s in namespace %s", claim.Name, claim.Namespace)
	}
	fault, err := readFault(p.faultFile)
	if err != nil {
		return nil, fmt.Errorf("fault file: %w", err)
	}
	configs, err := opaqueConfigs(claim.Status.Allocation.Devices.Config)
	if err != nil {
		return nil, fmt.Errorf("error generating configResultsMap: error getting opaque device configs: %w", err)
	}
	groups, err := configResults(configs, claim.Status.Allocation.Devices.Results)
	if err != nil {
		return nil, fmt.Errorf("error generating configResultsMap: %w", err)
	}

	edits := map[string]cdispec.ContainerEdits{}
	var devices []kubeletplugin.Device
	var record preparedClaim
	for cfg, results := range groups {
		if err := validate(cfg); err != nil {
			return nil, fmt.Errorf("error validating config: %w", err)
		}
		e, channels, domainID, err := p.apply(ctx, cfg, claim, results)
		if err != nil {
			return nil, fmt.Errorf("error applying config: %w", err)
		}
		record.domainID, record.channels = domainID, channels
		for _, r := range results {
			d := kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device}
			if e != nil { // cdi.go GetClaimDevice: a CDI ID only for a device with edits
				edits[r.Device] = *e
				d.CDIDeviceIDs = []string{qualifiedDeviceID(string(claim.UID), r.Device)}
			}
			devices = append(devices, d)
		}
	}
	if fault == faultNoIMEXChannel {
		edits = map[string]cdispec.ContainerEdits{}
		for i := range devices {
			devices[i].CDIDeviceIDs = nil
		}
	}
	spec, err := claimSpec(string(claim.UID), edits)
	if err != nil {
		return nil, fmt.Errorf("unable to create CDI spec file for claim: %w", err)
	}
	if spec != nil {
		path, err := writeClaimSpec(p.cdiDir, string(claim.UID), spec)
		if err != nil {
			return nil, fmt.Errorf("unable to create CDI spec file for claim: %w", err)
		}
		klog.InfoS("Wrote CDI spec", "claim", klog.KObj(claim), "path", path)
	}
	p.mu.Lock()
	p.prepared[claim.UID] = record
	p.mu.Unlock()
	klog.InfoS("Prepared claim", "claim", klog.KObj(claim), "uid", claim.UID, "domain", record.domainID,
		"channels", record.channels, "fault", fault)
	return devices, nil
}

func validate(cfg runtime.Object) error {
	switch c := cfg.(type) {
	case *ComputeDomainChannelConfig:
		return validateDomainID(c.DomainID)
	case *ComputeDomainDaemonConfig:
		return validateDomainID(c.DomainID)
	}
	return fmt.Errorf("runtime object is not a recognized configuration")
}

// apply is device_state.go applyConfig. It returns the CDI edits for the group's devices (nil:
// none), the channels it hands out and the domain.
func (p *plugin) apply(ctx context.Context, cfg runtime.Object, claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) (*cdispec.ContainerEdits, []int, string, error) {
	switch c := cfg.(type) {
	case *ComputeDomainChannelConfig:
		return p.applyChannel(ctx, c, claim, results)
	case *ComputeDomainDaemonConfig:
		// Upstream prepares the daemon pod's claim (config dir, CLIQUE_ID/COMPUTE_DOMAIN_* env);
		// this simulator runs no daemon pods, so such a claim is a mistake here.
		return nil, nil, "", permanentError{fmt.Errorf("simulator: ComputeDomain daemon claims are not simulated (no IMEX daemon runs here)")}
	}
	return nil, nil, "", fmt.Errorf("unknown config type: %T", cfg)
}

// applyChannel is device_state.go applyComputeDomainChannelConfigDriverManaged.
func (p *plugin) applyChannel(ctx context.Context, cfg *ComputeDomainChannelConfig, claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) (*cdispec.ContainerEdits, []int, string, error) {
	if len(results) != 1 {
		return nil, nil, "", fmt.Errorf("applyComputeDomainChannelConfig: unexpected results %v", results)
	}
	// Every request counts as a request for channel 0, even with allocationMode All.
	if err := p.assertChannelNotAllocated(0, claim.UID); err != nil {
		return nil, nil, "", fmt.Errorf("allocation failed: %w", err)
	}
	cd, err := p.c.computeDomainByUID(ctx, cfg.DomainID)
	if err != nil {
		return nil, nil, "", fmt.Errorf("error asserting ComputeDomain's namespace: error getting ComputeDomain: %w", err)
	}
	if cd == nil { // computedomain.go AssertComputeDomainNamespace
		return nil, nil, "", permanentError{fmt.Errorf("error asserting ComputeDomain's namespace: ComputeDomain not found: %s", cfg.DomainID)}
	}
	if cd.Namespace != claim.Namespace {
		return nil, nil, "", permanentError{fmt.Errorf("error asserting ComputeDomain's namespace: the ResourceClaim's namespace is different than the ComputeDomain's namespace")}
	}
	nodeIP, err := p.addNodeLabel(ctx, cfg.DomainID)
	if err != nil {
		return nil, nil, "", fmt.Errorf("error adding Node label for ComputeDomain: %w", err)
	}
	// Upstream: the label schedules the CD's DaemonSet pod here, whose daemon joins the clique and
	// turns Ready once its IMEX daemon is up; prepare fails (and the kubelet retries) until then.
	if err := p.joinClique(ctx, cd, nodeIP); err != nil {
		return nil, nil, "", fmt.Errorf("simulated IMEX daemon: %w", err)
	}
	ready, err := p.nodeReadyInClique(ctx, cd)
	if err != nil || !ready {
		return nil, nil, "", fmt.Errorf("error asserting ComputeDomain Ready: current node not ready in ComputeDomain (%v)", err)
	}
	channels := []int{0}
	if cfg.AllocationMode == allocationModeAll {
		channels = make([]int, maxImexChannelCount)
		for i := range channels {
			channels[i] = i
		}
	}
	e := channelEdits(p.major, cfg.AllocationMode)
	return &e, channels, cfg.DomainID, nil
}

// assertChannelNotAllocated is device_state.go assertImexChannelNotAllocated over this process's
// record of completed prepares (upstream: its checkpoint file).
func (p *plugin) assertChannelNotAllocated(id int, self types.UID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, pc := range p.prepared {
		if uid == self {
			continue // prepare is rerun for the same claim
		}
		for _, ch := range pc.channels {
			if ch == id {
				return fmt.Errorf("channel %d already allocated by claim %s (according to checkpoint)", id, uid)
			}
		}
	}
	return nil
}

// addNodeLabel is computedomain.go AddNodeLabel; it returns the node's InternalIP, which stands in
// for the daemon pod's IP.
func (p *plugin) addNodeLabel(ctx context.Context, cdUID string) (string, error) {
	var ip string
	err := p.c.mutateNode(ctx, p.nodeName, func(n *corev1.Node) (bool, error) {
		ip = internalIP(n)
		cur, ok := n.Labels[computeDomainLabelKey]
		if ok && cur != cdUID {
			return false, fmt.Errorf("label already exists for a different ComputeDomain")
		}
		if ok {
			return false, nil
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[computeDomainLabelKey] = cdUID
		return true, nil
	})
	return ip, err
}

// removeNodeLabel is computedomain.go RemoveNodeLabel: only our CD's label goes.
func (p *plugin) removeNodeLabel(ctx context.Context, cdUID string) error {
	return p.c.mutateNode(ctx, p.nodeName, func(n *corev1.Node) (bool, error) {
		if n.Labels[computeDomainLabelKey] != cdUID {
			return false, nil
		}
		delete(n.Labels, computeDomainLabelKey)
		return true, nil
	})
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func cliqueName(cdUID types.UID, cliqueID string) string {
	return fmt.Sprintf("%s.%s", cdUID, cliqueID)
}

// joinClique is what the node's compute-domain-daemon does (cmd/compute-domain-daemon/cdclique.go
// ensureCliqueExists, syncDaemonInfoToClique, updateDaemonStatus), its two steps (insert NotReady,
// then Ready once the IMEX daemon is) taken at once.
func (p *plugin) joinClique(ctx context.Context, cd *ComputeDomain, ip string) error {
	name := cliqueName(cd.UID, p.cliqueID)
	cl := &ComputeDomainClique{
		TypeMeta: metav1.TypeMeta{APIVersion: groupName + "/" + apiVersion, Kind: "ComputeDomainClique"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.namespace, Labels: map[string]string{
			computeDomainLabelKey: string(cd.UID), cliqueLabelKey: p.cliqueID,
		}},
	}
	u, err := toUnstructured(cl)
	if err != nil {
		return err
	}
	if _, err := p.c.dyn.Resource(cliqueGVR).Namespace(p.namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create CDClique '%s': %w", name, err)
	}
	return p.c.updateClique(ctx, p.namespace, name, func(cl *ComputeDomainClique) bool {
		return upsertDaemon(cl, p.nodeName, ip, p.cliqueID)
	})
}

// upsertDaemon inserts or refreshes this node's entry, Ready, with the lowest free index
// (cdclique.go getNextAvailableIndex); false when nothing changes.
func upsertDaemon(cl *ComputeDomainClique, node, ip, cliqueID string) bool {
	for _, d := range cl.Daemons {
		if d.NodeName == node {
			if d.IPAddress == ip && d.Status == statusReady {
				return false
			}
			d.IPAddress, d.Status = ip, statusReady
			return true
		}
	}
	used := map[int]bool{}
	for _, d := range cl.Daemons {
		used[d.Index] = true
	}
	next := 0
	for used[next] {
		next++
	}
	if next >= maxNodesPerIMEXDomain { // upstream errors the same way and retries
		klog.ErrorS(nil, "no available indices within maxNodesPerIMEXDomain", "max", maxNodesPerIMEXDomain)
		return false
	}
	cl.Daemons = append(cl.Daemons, &ComputeDomainDaemonInfo{NodeName: node, IPAddress: ip, CliqueID: cliqueID, Index: next, Status: statusReady})
	return true
}

// leaveClique is cdclique.go removeDaemonInfoFromClique, run when the daemon pod would stop (its
// node label removed on unprepare).
func (p *plugin) leaveClique(ctx context.Context, cdUID string) error {
	err := p.c.updateClique(ctx, p.namespace, cliqueName(types.UID(cdUID), p.cliqueID), func(cl *ComputeDomainClique) bool {
		var keep []*ComputeDomainDaemonInfo
		for _, d := range cl.Daemons {
			if d.NodeName != p.nodeName {
				keep = append(keep, d)
			}
		}
		changed := len(keep) != len(cl.Daemons)
		cl.Daemons = keep
		return changed
	})
	return ignoreNotFound(err)
}

// nodeReadyInClique is computedomain.go isCurrentNodeReady with ComputeDomainCliques on (its
// default since 0.3): this node Ready in the clique, else in the CD's status.
func (p *plugin) nodeReadyInClique(ctx context.Context, cd *ComputeDomain) (bool, error) {
	u, err := p.c.dyn.Resource(cliqueGVR).Namespace(p.namespace).Get(ctx, cliqueName(cd.UID, p.cliqueID), metav1.GetOptions{})
	if err == nil {
		cl, err := fromUnstructured[ComputeDomainClique](u)
		if err != nil {
			return false, err
		}
		for _, d := range cl.Daemons {
			if d.NodeName == p.nodeName && d.Status == statusReady {
				return true, nil
			}
		}
	}
	for _, n := range cd.Status.Nodes {
		if n.Name == p.nodeName {
			return n.Status == statusReady, nil
		}
	}
	return false, ignoreNotFound(err)
}

// UnprepareResourceClaims is device_state.go Unprepare: for a channel claim the node label goes
// (unprepareDevices: RemoveNodeLabel), then the CDI spec.
func (p *plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, ref := range claims {
		p.mu.Lock()
		pc, known := p.prepared[ref.UID]
		p.mu.Unlock()
		var err error
		if known && pc.domainID != "" {
			if err = p.removeNodeLabel(ctx, pc.domainID); err != nil {
				err = fmt.Errorf("error removing Node label for ComputeDomain: %w", err)
			} else if err = p.leaveClique(ctx, pc.domainID); err != nil {
				err = fmt.Errorf("simulated IMEX daemon: leaving the clique: %w", err)
			}
		}
		if err == nil {
			err = removeClaimSpec(p.cdiDir, string(ref.UID))
		}
		if err == nil {
			p.mu.Lock()
			delete(p.prepared, ref.UID)
			p.mu.Unlock()
			klog.InfoS("Unprepared claim", "claim", ref.String())
		} else {
			klog.ErrorS(err, "Unprepare failed", "claim", ref.String())
		}
		out[ref.UID] = err
	}
	return out, nil
}

// HandleError follows the DRAPlugin docs, as upstream's driver.go does.
func (p *plugin) HandleError(ctx context.Context, err error, msg string) {
	utilruntime.HandleErrorWithContext(ctx, err, msg)
}
