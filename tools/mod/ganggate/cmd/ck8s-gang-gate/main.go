// ck8s-gang-gate lifts the scheduling gate from every pod of a KAI gang at once, only when the
// autoscaled GPU pools (Karpenter NodePools) can hold the whole gang; else from none, with an event
// on each pod naming why. Gang pods are created with the gate (--gate); while gated, neither
// Karpenter nor KAI looks at them (internal/gate says why and what the model leaves out).
//
// Each pass (--interval) lists what it needs (simple polling, no informers): pods, the judged
// NodePools and their NodeClaims and nodes, ResourceSlices, ResourceClaims and their templates, and
// the gangs' PodGroups (scheduling.run.ai/v2alpha2); internal/gate decides; this file acts.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"ck8s-gpu.local/tools/ganggate/internal/gate"
)

const (
	component = "ck8s-gang-gate"
	// Karpenter labels its nodes and NodeClaims with their NodePool (pkg/apis/v1/labels.go NodePoolLabelKey).
	nodePoolLabel = "karpenter.sh/nodepool"
	// A node Karpenter is taking away (pkg/apis/v1/taints.go DisruptedTaintKey): no room offered there.
	disruptedTaint = "karpenter.sh/disrupted"
)

var (
	podGroupGVR  = schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2alpha2", Resource: "podgroups"}
	nodePoolGVR  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	nodeClaimGVR = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
)

// poolFlags: --pool NAME=GPUS_PER_NODE, repeatable, in the order given (first-fit tries that order).
type poolFlags struct {
	names []string
	gpus  map[string]int
}

func (p *poolFlags) String() string { return strings.Join(p.names, ",") }

func (p *poolFlags) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	count, err := strconv.Atoi(n)
	if !ok || name == "" || err != nil || count <= 0 {
		return fmt.Errorf("want NAME=GPUS_PER_NODE (a positive number), got %q", v)
	}
	if p.gpus == nil {
		p.gpus = map[string]int{}
	}
	if _, dup := p.gpus[name]; !dup {
		p.names = append(p.names, name)
	}
	p.gpus[name] = count
	return nil
}

type config struct {
	pools       poolFlags
	gate        string
	deviceClass string
	driver      string
	annotation  string
	settle      time.Duration
}

type controller struct {
	config
	cs       kubernetes.Interface
	dyn      dynamic.Interface
	recorder record.EventRecorder
	told     map[string]string // pod UID -> the last message recorded on it
	logged   map[string]string // gang key -> the last message logged
}

func main() {
	var c config
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (default: the in-cluster config)")
	flag.Var(&c.pools, "pool", "NAME=GPUS_PER_NODE: a NodePool this gate judges and the GPUs each of its nodes has (repeatable)")
	flag.StringVar(&c.gate, "gate", "ck8s-gpu.io/gang", "the scheduling gate gang pods are created with")
	flag.StringVar(&c.deviceClass, "device-class", "gpu.nvidia.com", "the DeviceClass whose requests count as GPUs")
	flag.StringVar(&c.driver, "driver", "gpu.nvidia.com", "the DRA driver whose ResourceSlices and allocations count")
	interval := flag.Duration("interval", 2*time.Second, "time between passes")
	flag.StringVar(&c.annotation, "pod-group-annotation", "pod-group-name",
		"the pod annotation naming its PodGroup (KAI-Scheduler pkg/common/constants PodGroupAnnotationForPod)")
	flag.DurationVar(&c.settle, "settle", 3*time.Second, "judge a gang only once its newest pod is this old")
	klog.InitFlags(nil)
	flag.Parse()
	if len(c.pools.names) == 0 {
		klog.Error("no --pool given: nothing to judge")
		os.Exit(2)
	}

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		klog.ErrorS(err, "no cluster config")
		os.Exit(1)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	ctl := &controller{
		config: c, cs: cs, dyn: dynamic.NewForConfigOrDie(cfg),
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}),
		told:     map[string]string{}, logged: map[string]string{},
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	klog.InfoS("ck8s-gang-gate started", "pools", c.pools.gpus, "gate", c.gate, "deviceClass", c.deviceClass,
		"driver", c.driver, "interval", *interval, "settle", c.settle)
	for {
		if err := ctl.pass(ctx); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "pass failed")
		}
		select {
		case <-ctx.Done():
			klog.Info("stopping")
			return
		case <-time.After(*interval):
		}
	}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return rest.InClusterConfig()
}

func hasGate(p *corev1.Pod, name string) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == name {
			return true
		}
	}
	return false
}

func live(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// snapshot is what one pass read.
type snapshot struct {
	templates map[string]*resourcev1.ResourceClaimTemplate // ns/name
	claims    map[string]*resourcev1.ResourceClaim         // ns/name
}

// demand of a pod: what its claims ask of the device class; an error names a claim not readable yet.
func (c *controller) demand(s *snapshot, p *corev1.Pod) (gate.Demand, error) {
	var d gate.Demand
	for _, rc := range p.Spec.ResourceClaims {
		switch {
		case rc.ResourceClaimTemplateName != nil:
			t, ok := s.templates[p.Namespace+"/"+*rc.ResourceClaimTemplateName]
			if !ok {
				return d, fmt.Errorf("ResourceClaimTemplate %s/%s not found", p.Namespace, *rc.ResourceClaimTemplateName)
			}
			d = d.AddRequests(t.Spec.Spec.Devices.Requests, c.deviceClass)
		case rc.ResourceClaimName != nil:
			cl, ok := s.claims[p.Namespace+"/"+*rc.ResourceClaimName]
			if !ok {
				return d, fmt.Errorf("ResourceClaim %s/%s not found", p.Namespace, *rc.ResourceClaimName)
			}
			d = d.AddRequests(cl.Spec.Devices.Requests, c.deviceClass)
		}
	}
	return d, nil
}

// poolsOf: the pool the pod's nodeSelector names, else none (= every judged pool).
func poolsOf(p *corev1.Pod) []string {
	if name := p.Spec.NodeSelector[nodePoolLabel]; name != "" {
		return []string{name}
	}
	return nil
}

func (c *controller) pass(ctx context.Context) error {
	podList, err := c.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	var gated []*corev1.Pod
	for i := range podList.Items {
		p := &podList.Items[i]
		if live(p) && hasGate(p, c.gate) {
			gated = append(gated, p)
		}
	}
	c.forget(gated)
	if len(gated) == 0 {
		return nil
	}
	s, pools, err := c.read(ctx)
	if err != nil {
		return err
	}

	// Released but not bound: pending pods asking for GPUs, without the gate and without a node.
	var inflight []gate.Pod
	for i := range podList.Items {
		p := &podList.Items[i]
		if !live(p) || p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) > 0 {
			continue
		}
		if d, err := c.demand(s, p); err == nil && !d.None() {
			inflight = append(inflight, gate.Pod{Name: p.Namespace + "/" + p.Name, Created: p.CreationTimestamp.Time,
				Pools: poolsOf(p), Demand: d})
		}
	}

	// The gangs: gated pods by (namespace, pod-group annotation); without it, a gang of one.
	byKey := map[string]*gate.Gang{}
	podsOf := map[string][]*corev1.Pod{}
	var keys []string
	for _, p := range gated {
		group, single := p.Annotations[c.annotation], false
		if group == "" {
			group, single = p.Name, true
		}
		key := p.Namespace + "/" + group
		if single {
			key += "/pod"
		}
		g, ok := byKey[key]
		if !ok {
			g = &gate.Gang{Namespace: p.Namespace, Name: group, Single: single}
			byKey[key] = g
			keys = append(keys, key)
		}
		d, err := c.demand(s, p)
		if err != nil && g.Unknown == "" {
			g.Unknown = fmt.Sprintf("pod %s: %v", p.Name, err)
		}
		g.Gated = append(g.Gated, gate.Pod{Name: p.Name, Created: p.CreationTimestamp.Time, Pools: poolsOf(p), Demand: d})
		podsOf[key] = append(podsOf[key], p)
	}
	gangs := make([]gate.Gang, 0, len(keys))
	for _, key := range keys {
		g := byKey[key]
		if g.Single {
			g.PodGroupFound, g.MinMember, g.Existing = true, 1, 1
		} else {
			pg, err := c.dyn.Resource(podGroupGVR).Namespace(g.Namespace).Get(ctx, g.Name, metav1.GetOptions{})
			switch {
			case err == nil:
				g.PodGroupFound = true
				mm, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
				g.MinMember = int(mm)
			case !apierrors.IsNotFound(err):
				klog.ErrorS(err, "reading PodGroup", "podGroup", key)
			}
			for i := range podList.Items {
				p := &podList.Items[i]
				if p.Namespace == g.Namespace && live(p) && p.Annotations[c.annotation] == g.Name {
					g.Existing++
				}
			}
		}
		gangs = append(gangs, *g)
	}

	for _, d := range gate.Decide(time.Now(), c.settle, pools, inflight, gangs) {
		key := d.Gang.Namespace + "/" + d.Gang.Name
		if d.Gang.Single {
			key += "/pod"
		}
		c.act(ctx, d, podsOf[key])
	}
	return nil
}

// read lists what capacity is made of: the judged pools' NodePools, NodeClaims, nodes, slices and
// allocations, and the claims and templates demand is read from.
func (c *controller) read(ctx context.Context) (*snapshot, []gate.Pool, error) {
	s := &snapshot{templates: map[string]*resourcev1.ResourceClaimTemplate{}, claims: map[string]*resourcev1.ResourceClaim{}}
	templates, err := c.cs.ResourceV1().ResourceClaimTemplates("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing ResourceClaimTemplates: %w", err)
	}
	for i := range templates.Items {
		t := &templates.Items[i]
		s.templates[t.Namespace+"/"+t.Name] = t
	}
	claims, err := c.cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	allocated := map[string]int{} // node (= the slice pool's name) -> devices of --driver allocated
	for i := range claims.Items {
		cl := &claims.Items[i]
		s.claims[cl.Namespace+"/"+cl.Name] = cl
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			if r.Driver == c.driver {
				allocated[r.Pool]++
			}
		}
	}
	slices, err := c.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	devices := map[string]int{} // node -> devices of --driver its slices publish
	for _, sl := range slices.Items {
		if sl.Spec.Driver == c.driver && sl.Spec.NodeName != nil {
			devices[*sl.Spec.NodeName] += len(sl.Spec.Devices)
		}
	}
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodePoolLabel})
	if err != nil {
		return nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	nodeClaims, err := c.dyn.Resource(nodeClaimGVR).List(ctx, metav1.ListOptions{LabelSelector: nodePoolLabel})
	if err != nil {
		return nil, nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	registered := map[string]bool{}
	for _, n := range nodes.Items {
		registered[n.Name] = true
	}

	var pools []gate.Pool
	for _, name := range c.pools.names {
		per := c.pools.gpus[name]
		p := gate.Pool{Name: name, GPUsPerNode: per}
		np, err := c.dyn.Resource(nodePoolGVR).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			klog.V(1).InfoS("NodePool not found: it can add no node", "nodePool", name)
		case err != nil:
			return nil, nil, fmt.Errorf("reading NodePool %s: %w", name, err)
		default:
			if v, found, _ := unstructured.NestedFieldNoCopy(np.Object, "spec", "limits", "nodes"); !found {
				p.Unbounded = true
			} else if q, err := resource.ParseQuantity(fmt.Sprint(v)); err != nil {
				return nil, nil, fmt.Errorf("NodePool %s limits.nodes %v: %w", name, v, err)
			} else {
				p.Limit = int(q.Value())
			}
		}
		for _, n := range nodes.Items {
			if n.Labels[nodePoolLabel] != name || n.DeletionTimestamp != nil || disrupted(&n) {
				continue
			}
			total := devices[n.Name]
			if total == 0 { // registered, slice not published yet: the node it will be
				total = per
			}
			p.Nodes = append(p.Nodes, gate.Node{Name: n.Name, Total: total, Free: max(total-allocated[n.Name], 0)})
		}
		for _, nc := range nodeClaims.Items {
			if nc.GetLabels()[nodePoolLabel] != name {
				continue
			}
			p.NodeClaims++
			nodeName, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName")
			if nc.GetDeletionTimestamp() == nil && (nodeName == "" || !registered[nodeName]) {
				// launching: an empty node of the pool soon (Karpenter places pending pods there too)
				p.Nodes = append(p.Nodes, gate.Node{Name: "nodeclaim/" + nc.GetName(), Total: per, Free: per})
			}
		}
		sort.SliceStable(p.Nodes, func(i, j int) bool { return p.Nodes[i].Name < p.Nodes[j].Name })
		pools = append(pools, p)
	}
	return s, pools, nil
}

func disrupted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == disruptedTaint {
			return true
		}
	}
	return false
}

// act releases a gang, or records why it waits (once per message per pod).
func (c *controller) act(ctx context.Context, d gate.Decision, pods []*corev1.Pod) {
	key := d.Gang.Key()
	switch d.Verdict {
	case gate.Settling:
		return
	case gate.Release:
		released := 0
		for _, p := range pods {
			if err := c.ungate(ctx, p); err != nil {
				klog.ErrorS(err, "removing the gate", "pod", klog.KObj(p), "gang", key)
				continue
			}
			released++
			c.recorder.Event(p, corev1.EventTypeNormal, "GangReleased", d.Message)
			delete(c.told, string(p.UID))
		}
		klog.InfoS("gang released", "gang", key, "released", released, "gated", len(pods), "message", d.Message)
		delete(c.logged, key)
		return
	}
	reason, kind := "GangWaitsForCapacity", corev1.EventTypeWarning
	switch d.Verdict {
	case gate.NoPodGroup:
		reason, kind = "GangWaitsForPodGroup", corev1.EventTypeNormal
	case gate.TooFewPods:
		reason, kind = "GangWaitsForPods", corev1.EventTypeNormal
	case gate.UnknownNeed:
		reason, kind = "GangWaitsForClaims", corev1.EventTypeNormal
	}
	if c.logged[key] != d.Message {
		c.logged[key] = d.Message
		klog.InfoS("gang waits", "gang", key, "reason", reason, "message", d.Message)
	}
	for _, p := range pods {
		if c.told[string(p.UID)] != d.Message {
			c.told[string(p.UID)] = d.Message
			c.recorder.Event(p, kind, reason, d.Message)
		}
	}
}

// ungate removes our gate from the pod's spec.schedulingGates (the API allows removing gates only).
func (c *controller) ungate(ctx context.Context, pod *corev1.Pod) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var keep []corev1.PodSchedulingGate
		for _, g := range p.Spec.SchedulingGates {
			if g.Name != c.gate {
				keep = append(keep, g)
			}
		}
		if len(keep) == len(p.Spec.SchedulingGates) {
			return nil
		}
		p.Spec.SchedulingGates = keep
		_, err = c.cs.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// forget drops what was told to pods no longer gated.
func (c *controller) forget(gated []*corev1.Pod) {
	still := map[string]bool{}
	for _, p := range gated {
		still[string(p.UID)] = true
	}
	for uid := range c.told {
		if !still[uid] {
			delete(c.told, uid)
		}
	}
}
