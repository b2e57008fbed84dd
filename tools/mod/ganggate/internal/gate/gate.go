// Package gate is the pure decision of ck8s-gang-gate: given the gated gangs, the pods released
// but not yet bound, and what each judged pool has (free GPUs on its nodes, nodes it may still
// add), which gangs are released this pass, and why the others wait. No Kubernetes client here:
// cmd/ck8s-gang-gate reads the cluster into these types.
//
// Why a gate at all: Karpenter provisions only for pods the kube-scheduler marked PodScheduled=False
// with reason Unschedulable (sigs.k8s.io/karpenter v1.15.0 pkg/utils/pod/scheduling.go:
// IsProvisionable, FailedToSchedule), and it knows no PodGroup, so a gang of N pods in a pool that
// can add fewer than N nodes gets part of its nodes, which then idle. A pod with a scheduling gate
// has reason SchedulingGated: Karpenter ignores it, and so does KAI (KAI-Scheduler
// pkg/scheduler/api/pod_info/pod_info.go: a pod with spec.schedulingGates is status Gated). So the
// gate holds every pod of a gang, and this decision lifts it from all of them or from none.
//
// The model, and what it leaves out:
//   - A pod's demand is the GPUs its claims ask of one DeviceClass (cmd: --device-class):
//     allocationMode All = a whole, empty node of the pool; else `count` (default 1). CEL selectors
//     (product, memory) are not read: a pod is assumed to fit any node of the pools it may use.
//   - A pod may use the pool its nodeSelector karpenter.sh/nodepool names, else every judged pool;
//     node affinity, tolerations, topology and CPU/memory requests are not read.
//   - A pool's capacity is GPU counts: free GPUs per existing node (slices minus allocations; a
//     NodeClaim whose node has not registered counts as an empty node) and the nodes limits.nodes
//     still allows. Karpenter is trusted to place the pods as this first-fit-decreasing does;
//     it may pack differently (another instance type, spot unavailable), which this cannot see.
//   - A gang that does not fit takes no capacity, so a later, smaller gang may go first
//     (no reservation, no backfill control).
package gate

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Demand is what one pod asks of the GPUs: a whole empty node, or a number of GPUs on one node.
type Demand struct {
	GPUs      int
	WholeNode bool
}

// None: the pod asks for no GPU (it is placed without taking capacity).
func (d Demand) None() bool { return !d.WholeNode && d.GPUs == 0 }

func (d Demand) String() string {
	if d.WholeNode {
		return "a whole node"
	}
	return fmt.Sprintf("%d GPUs", d.GPUs)
}

// Pod is one pod of a gang (gated) or one released but not yet bound (in flight).
type Pod struct {
	Name    string
	Created time.Time
	// Pools the pod may use (its nodeSelector karpenter.sh/nodepool); empty: every judged pool.
	Pools  []string
	Demand Demand
}

// Gang is the gated pods of one PodGroup (or one pod without the annotation), as read this pass.
type Gang struct {
	Namespace, Name string
	// Single: a gated pod without the pod-group annotation, a gang of one.
	Single bool
	// PodGroupFound: the PodGroup exists (always true for Single); MinMember is its spec.minMember.
	PodGroupFound bool
	MinMember     int
	// Existing: the gang's pods that exist, gated or not.
	Existing int
	Gated    []Pod
	// Unknown: why the demand of a pod cannot be read yet (a claim template missing), or "".
	Unknown string
}

// Key is namespace/name, the gang's name in messages.
func (g *Gang) Key() string { return g.Namespace + "/" + g.Name }

func (g *Gang) oldest() time.Time {
	var t time.Time
	for i, p := range g.Gated {
		if i == 0 || p.Created.Before(t) {
			t = p.Created
		}
	}
	return t
}

func (g *Gang) newest() time.Time {
	var t time.Time
	for _, p := range g.Gated {
		if p.Created.After(t) {
			t = p.Created
		}
	}
	return t
}

// Node is an existing node of a pool (or a NodeClaim not registered yet: Free = Total).
type Node struct {
	Name        string
	Total, Free int
}

// Pool is one judged NodePool.
type Pool struct {
	Name        string
	GPUsPerNode int
	Nodes       []Node
	// Limit is spec.limits.nodes; Unbounded when the NodePool sets none.
	Limit      int
	Unbounded  bool
	NodeClaims int
}

// CanAdd is how many more nodes the NodePool's limit allows (-1: unbounded).
func (p *Pool) CanAdd() int {
	if p.Unbounded {
		return -1
	}
	return max(p.Limit-p.NodeClaims, 0)
}

// Verdict is what becomes of a gang this pass.
type Verdict string

const (
	Release     Verdict = "Release"
	Settling    Verdict = "Settling"    // its newest pod is younger than settle: judged later, silently
	NoPodGroup  Verdict = "NoPodGroup"  // its PodGroup (or the API) is missing
	TooFewPods  Verdict = "TooFewPods"  // fewer than minMember pods exist
	UnknownNeed Verdict = "UnknownNeed" // a pod's demand cannot be read
	NoCapacity  Verdict = "NoCapacity"  // the pools cannot hold the whole gang
)

// Decision for one gang.
type Decision struct {
	Gang    *Gang
	Verdict Verdict
	Message string
	// For Release: new nodes per pool and pods on existing nodes.
	NewNodes   map[string]int
	OnExisting int
}

// Decide judges the gangs, oldest first (earliest pod creationTimestamp). Capacity is taken first by
// the pods in flight (released, not bound: they will land somewhere), then by each gang released
// here, so two gangs never count the same GPUs.
func Decide(now time.Time, settle time.Duration, pools []Pool, inflight []Pod, gangs []Gang) []Decision {
	s := newState(pools)
	for _, p := range sortDecreasing(inflight) {
		s.place(p, false) // best effort: what does not fit still holds nothing more
	}
	order := make([]*Gang, len(gangs))
	for i := range gangs {
		order[i] = &gangs[i]
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i].oldest(), order[j].oldest()
		if !a.Equal(b) {
			return a.Before(b)
		}
		return order[i].Key() < order[j].Key()
	})
	var out []Decision
	for _, g := range order {
		out = append(out, s.judge(now, settle, g))
	}
	return out
}

func (s *state) judge(now time.Time, settle time.Duration, g *Gang) Decision {
	d := Decision{Gang: g}
	switch {
	case len(g.Gated) == 0:
		d.Verdict, d.Message = Settling, "no gated pod"
	case now.Sub(g.newest()) < settle:
		d.Verdict, d.Message = Settling, fmt.Sprintf("gang %s: waiting %s for more pods", g.Key(), settle)
	case !g.Single && !g.PodGroupFound:
		d.Verdict, d.Message = NoPodGroup, fmt.Sprintf("PodGroup %s not found", g.Name)
	case g.Existing < g.MinMember:
		d.Verdict, d.Message = TooFewPods, fmt.Sprintf("gang %s: %d of %d pods exist", g.Key(), g.Existing, g.MinMember)
	case g.Unknown != "":
		d.Verdict, d.Message = UnknownNeed, fmt.Sprintf("gang %s: %s", g.Key(), g.Unknown)
	default:
		try := s.clone()
		if plan, ok := try.fit(g.Gated, false); ok {
			*s = *try
			d.Verdict, d.NewNodes, d.OnExisting = Release, plan.newNodes, plan.onExisting
			d.Message = fmt.Sprintf("gang %s: %d pods fit: %s", g.Key(), len(g.Gated), plan.describe())
		} else {
			d.Verdict, d.Message = NoCapacity, s.whyNot(g)
		}
	}
	return d
}

type poolState struct {
	Pool
	added   int   // new nodes opened this pass (by gangs released, or pods in flight)
	newFree []int // free GPUs on those new nodes
}

type state struct{ pools []*poolState }

func newState(pools []Pool) *state {
	s := &state{}
	for _, p := range pools {
		p.Nodes = append([]Node(nil), p.Nodes...)
		s.pools = append(s.pools, &poolState{Pool: p})
	}
	return s
}

func (s *state) clone() *state {
	c := &state{}
	for _, p := range s.pools {
		q := *p
		q.Nodes = append([]Node(nil), p.Nodes...)
		q.newFree = append([]int(nil), p.newFree...)
		c.pools = append(c.pools, &q)
	}
	return c
}

func (s *state) candidates(p Pod) []*poolState {
	if len(p.Pools) == 0 {
		return s.pools
	}
	var out []*poolState
	for _, ps := range s.pools {
		for _, name := range p.Pools {
			if ps.Name == name {
				out = append(out, ps)
			}
		}
	}
	return out
}

// fits: can a node with `free` of `total` GPUs take demand d.
func fits(d Demand, free, total int) bool {
	if d.WholeNode {
		return total > 0 && free == total
	}
	return d.GPUs <= free
}

func take(d Demand, free int) int {
	if d.WholeNode {
		return 0
	}
	return free - d.GPUs
}

type placement struct {
	pool  string
	onNew bool
}

// place puts one pod first-fit: existing nodes of its pools, then nodes opened this pass, then a
// new node. unbounded ignores limits.nodes (to say how many nodes a gang would need).
func (s *state) place(p Pod, unbounded bool) (placement, bool) {
	if p.Demand.None() {
		return placement{}, true
	}
	cands := s.candidates(p)
	for _, ps := range cands {
		for i := range ps.Nodes {
			n := &ps.Nodes[i]
			if fits(p.Demand, n.Free, n.Total) {
				n.Free = take(p.Demand, n.Free)
				return placement{pool: ps.Name}, true
			}
		}
	}
	for _, ps := range cands {
		for i, free := range ps.newFree {
			if fits(p.Demand, free, ps.GPUsPerNode) {
				ps.newFree[i] = take(p.Demand, free)
				return placement{pool: ps.Name, onNew: true}, true
			}
		}
	}
	for _, ps := range cands {
		room := ps.CanAdd()
		if !unbounded && room >= 0 && ps.added >= room {
			continue
		}
		if fits(p.Demand, ps.GPUsPerNode, ps.GPUsPerNode) {
			ps.added++
			ps.newFree = append(ps.newFree, take(p.Demand, ps.GPUsPerNode))
			return placement{pool: ps.Name, onNew: true}, true
		}
	}
	return placement{}, false
}

func sortDecreasing(pods []Pod) []Pod {
	out := append([]Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Demand, out[j].Demand
		if a.WholeNode != b.WholeNode {
			return a.WholeNode
		}
		return a.GPUs > b.GPUs
	})
	return out
}

type plan struct {
	newNodes   map[string]int
	onExisting int
	failed     *Pod
}

func (p plan) describe() string {
	var parts []string
	names := make([]string, 0, len(p.newNodes))
	for n := range p.newNodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%d new nodes of pool %s", p.newNodes[n], n))
	}
	if len(parts) == 0 {
		parts = append(parts, "0 new nodes")
	}
	return fmt.Sprintf("%s, %d on existing nodes", strings.Join(parts, ", "), p.onExisting)
}

// fit places every pod of the gang, largest first; false at the first that does not fit.
func (s *state) fit(pods []Pod, unbounded bool) (plan, bool) {
	pl := plan{newNodes: map[string]int{}}
	before := map[string]int{}
	for _, ps := range s.pools {
		before[ps.Name] = ps.added
	}
	for _, p := range sortDecreasing(pods) {
		where, ok := s.place(p, unbounded)
		if !ok {
			pl.failed = &p
			return pl, false
		}
		if !where.onNew && where.pool != "" {
			pl.onExisting++
		}
	}
	for _, ps := range s.pools {
		if n := ps.added - before[ps.Name]; n > 0 {
			pl.newNodes[ps.Name] = n
		}
	}
	return pl, true
}

func (ps *poolState) freeGPUs() int {
	t := 0
	for _, n := range ps.Nodes {
		t += n.Free
	}
	return t
}

// whyNot names the numbers: how many new nodes of which pool the gang needs beyond the free GPUs
// its pools' nodes have, and how many the pool can add; or which pod no node of its pools can hold.
func (s *state) whyNot(g *Gang) string {
	head := fmt.Sprintf("gang %s (minMember %d)", g.Key(), g.MinMember)
	tail := ": none of its pods is released, so no node is launched for it"
	want := s.clone()
	pl, ok := want.fit(g.Gated, true)
	if !ok {
		p := pl.failed
		var sizes []string
		for _, ps := range s.candidates(*p) {
			sizes = append(sizes, fmt.Sprintf("%s: %d GPUs a node", ps.Name, ps.GPUsPerNode))
		}
		where := "no pool this gate judges"
		if len(sizes) > 0 {
			where = "no node of its pools (" + strings.Join(sizes, ", ") + ")"
		} else if len(p.Pools) > 0 {
			where = fmt.Sprintf("pool %s, which this gate does not judge", strings.Join(p.Pools, ","))
		}
		return fmt.Sprintf("%s cannot fit anywhere: pod %s needs %s and %s can hold it%s", head, p.Name, p.Demand, where, tail)
	}
	var short []string
	for _, ps := range s.pools {
		need := pl.newNodes[ps.Name]
		room := ps.CanAdd()
		if need == 0 || room < 0 || need <= room-ps.added {
			continue
		}
		limit := "unbounded"
		if !ps.Unbounded {
			limit = fmt.Sprint(ps.Limit)
		}
		taken := ""
		if ps.added > 0 {
			taken = fmt.Sprintf(", %d taken this pass by pods released before it", ps.added)
		}
		short = append(short, fmt.Sprintf("needs %d new nodes of pool %s (%d GPUs each); the pool can add %d (limits.nodes %s, %d NodeClaims%s) and its nodes have %d free GPUs",
			need, ps.Name, ps.GPUsPerNode, max(room-ps.added, 0), limit, ps.NodeClaims, taken, ps.freeGPUs()))
	}
	if len(short) == 0 { // the greedy with limits chose differently: say so plainly
		return fmt.Sprintf("%s does not fit in the room its pools have left%s", head, tail)
	}
	return head + " " + strings.Join(short, "; ") + tail
}
