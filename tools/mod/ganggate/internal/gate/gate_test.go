package gate

import (
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pods(n int, d Demand, pools ...string) []Pod {
	var out []Pod
	for i := range n {
		out = append(out, Pod{Name: "p" + string(rune('a'+i)), Created: t0, Pools: pools, Demand: d})
	}
	return out
}

func gang(name string, min int, gated []Pod) Gang {
	return Gang{Namespace: "default", Name: name, PodGroupFound: true, MinMember: min, Existing: len(gated), Gated: gated}
}

func h100(limit, claims int, nodes ...Node) Pool {
	return Pool{Name: "h100", GPUsPerNode: 8, Limit: limit, NodeClaims: claims, Nodes: nodes}
}

func l4(limit int) Pool { return Pool{Name: "l4", GPUsPerNode: 1, Limit: limit} }

var whole = Demand{WholeNode: true}

func TestDecide(t *testing.T) {
	later := func(g Gang, d time.Duration) Gang {
		for i := range g.Gated {
			g.Gated[i].Created = g.Gated[i].Created.Add(d)
		}
		return g
	}
	cases := []struct {
		name     string
		pools    []Pool
		inflight []Pod
		gangs    []Gang
		verdicts []Verdict
		messages []string // substrings of each decision's message ("" = not checked)
	}{
		{
			name:     "fits on new nodes",
			pools:    []Pool{h100(2, 0), l4(3)},
			gangs:    []Gang{gang("two", 2, pods(2, whole, "h100"))},
			verdicts: []Verdict{Release},
			messages: []string{"gang default/two: 2 pods fit: 2 new nodes of pool h100, 0 on existing nodes"},
		},
		{
			name:     "does not fit by limits",
			pools:    []Pool{h100(2, 0), l4(3)},
			gangs:    []Gang{gang("big", 3, pods(3, whole, "h100"))},
			verdicts: []Verdict{NoCapacity},
			messages: []string{"gang default/big (minMember 3) needs 3 new nodes of pool h100 (8 GPUs each); the pool can add 2 (limits.nodes 2, 0 NodeClaims) and its nodes have 0 free GPUs: none of its pods is released"},
		},
		{
			name:     "existing NodeClaims count against the limit",
			pools:    []Pool{h100(2, 1, Node{"n1", 8, 0})},
			gangs:    []Gang{gang("two", 2, pods(2, Demand{GPUs: 8}, "h100"))},
			verdicts: []Verdict{NoCapacity},
			messages: []string{"needs 2 new nodes of pool h100 (8 GPUs each); the pool can add 1 (limits.nodes 2, 1 NodeClaims)"},
		},
		{
			name:     "fits partly on existing free GPUs",
			pools:    []Pool{h100(2, 1, Node{"n1", 8, 4})},
			gangs:    []Gang{gang("mixed", 3, pods(3, Demand{GPUs: 4}, "h100"))},
			verdicts: []Verdict{Release},
			messages: []string{"3 pods fit: 1 new nodes of pool h100, 1 on existing nodes"},
		},
		{
			name:     "a whole-node pod needs an empty node, not free GPUs on a busy one",
			pools:    []Pool{h100(1, 1, Node{"n1", 8, 7})},
			gangs:    []Gang{gang("w", 1, pods(1, whole, "h100"))},
			verdicts: []Verdict{NoCapacity},
			messages: []string{"needs 1 new nodes of pool h100 (8 GPUs each); the pool can add 0 (limits.nodes 1, 1 NodeClaims) and its nodes have 7 free GPUs"},
		},
		{
			name:     "a whole-node pod takes an empty existing node",
			pools:    []Pool{h100(1, 1, Node{"n1", 8, 8})},
			gangs:    []Gang{gang("w", 1, pods(1, whole, "h100"))},
			verdicts: []Verdict{Release},
			messages: []string{"0 new nodes, 1 on existing nodes"},
		},
		{
			name:  "two gangs in one pass compete: the older takes the room",
			pools: []Pool{h100(2, 0)},
			gangs: []Gang{
				later(gang("second", 2, pods(2, whole, "h100")), time.Second),
				gang("first", 2, pods(2, whole, "h100")),
			},
			verdicts: []Verdict{Release, NoCapacity},
			messages: []string{"gang default/first: 2 pods fit", "gang default/second (minMember 2) needs 2 new nodes of pool h100 (8 GPUs each); the pool can add 0 (limits.nodes 2, 0 NodeClaims, 2 taken this pass"},
		},
		{
			name:     "released-but-unbound pods hold capacity",
			pools:    []Pool{h100(2, 0)},
			inflight: pods(1, whole, "h100"),
			gangs:    []Gang{gang("two", 2, pods(2, whole, "h100"))},
			verdicts: []Verdict{NoCapacity},
			messages: []string{"the pool can add 1 (limits.nodes 2, 0 NodeClaims, 1 taken this pass"},
		},
		{
			name:     "in-flight pods land on a launching NodeClaim first",
			pools:    []Pool{h100(2, 1, Node{"claim-1", 8, 8})},
			inflight: pods(1, whole, "h100"),
			gangs:    []Gang{gang("one", 1, pods(1, whole, "h100"))},
			verdicts: []Verdict{Release},
			messages: []string{"1 new nodes of pool h100, 0 on existing nodes"},
		},
		{
			name:     "a gang below minMember waits",
			pools:    []Pool{h100(2, 0)},
			gangs:    []Gang{func() Gang { g := gang("g", 4, pods(3, whole, "h100")); return g }()},
			verdicts: []Verdict{TooFewPods},
			messages: []string{"gang default/g: 3 of 4 pods exist"},
		},
		{
			name:     "a missing PodGroup waits",
			pools:    []Pool{h100(2, 0)},
			gangs:    []Gang{func() Gang { g := gang("g", 0, pods(1, whole, "h100")); g.PodGroupFound = false; return g }()},
			verdicts: []Verdict{NoPodGroup},
			messages: []string{"PodGroup g not found"},
		},
		{
			name:  "a pod without annotation is a gang of one",
			pools: []Pool{l4(3)},
			gangs: []Gang{{Namespace: "default", Name: "solo", Single: true, MinMember: 1, Existing: 1,
				Gated: pods(1, Demand{GPUs: 1})}},
			verdicts: []Verdict{Release},
			messages: []string{"gang default/solo: 1 pods fit: 1 new nodes of pool l4"},
		},
		{
			name:     "a pod larger than any node cannot fit anywhere",
			pools:    []Pool{h100(2, 0), l4(3)},
			gangs:    []Gang{gang("huge", 1, pods(1, Demand{GPUs: 9}))},
			verdicts: []Verdict{NoCapacity},
			messages: []string{"cannot fit anywhere: pod pa needs 9 GPUs and no node of its pools (h100: 8 GPUs a node, l4: 1 GPUs a node) can hold it"},
		},
		{
			name:     "a pod naming a pool the gate does not judge",
			pools:    []Pool{h100(2, 0)},
			gangs:    []Gang{gang("x", 1, pods(1, Demand{GPUs: 1}, "b200"))},
			verdicts: []Verdict{NoCapacity},
			messages: []string{"pool b200, which this gate does not judge"},
		},
		{
			name:     "unbounded pool",
			pools:    []Pool{{Name: "h100", GPUsPerNode: 8, Unbounded: true}},
			gangs:    []Gang{gang("many", 5, pods(5, whole))},
			verdicts: []Verdict{Release},
			messages: []string{"5 new nodes of pool h100"},
		},
		{
			name:     "pods without GPUs fit without capacity",
			pools:    []Pool{h100(0, 0)},
			gangs:    []Gang{gang("cpu", 2, pods(2, Demand{}))},
			verdicts: []Verdict{Release},
		},
		{
			name:  "a smaller gang may go where a bigger one did not fit",
			pools: []Pool{h100(2, 0)},
			gangs: []Gang{gang("big", 3, pods(3, whole, "h100")),
				later(gang("small", 2, pods(2, whole, "h100")), time.Second)},
			verdicts: []Verdict{NoCapacity, Release},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(t0.Add(time.Minute), 3*time.Second, c.pools, c.inflight, c.gangs)
			if len(got) != len(c.verdicts) {
				t.Fatalf("%d decisions, want %d", len(got), len(c.verdicts))
			}
			for i, d := range got {
				if d.Verdict != c.verdicts[i] {
					t.Errorf("decision %d (%s): %s, want %s: %s", i, d.Gang.Key(), d.Verdict, c.verdicts[i], d.Message)
				}
				if i < len(c.messages) && !strings.Contains(d.Message, c.messages[i]) {
					t.Errorf("decision %d message\n  %q\nwants\n  %q", i, d.Message, c.messages[i])
				}
			}
		})
	}
}

func TestSettle(t *testing.T) {
	g := gang("young", 1, pods(1, whole, "h100"))
	got := Decide(t0.Add(2*time.Second), 3*time.Second, []Pool{h100(2, 0)}, nil, []Gang{g})
	if got[0].Verdict != Settling {
		t.Fatalf("%s: %s", got[0].Verdict, got[0].Message)
	}
	got = Decide(t0.Add(4*time.Second), 3*time.Second, []Pool{h100(2, 0)}, nil, []Gang{g})
	if got[0].Verdict != Release {
		t.Fatalf("%s: %s", got[0].Verdict, got[0].Message)
	}
}

func TestDecideDoesNotChangeItsInput(t *testing.T) {
	pools := []Pool{h100(2, 1, Node{"n1", 8, 8})}
	Decide(t0.Add(time.Minute), 0, pools, nil, []Gang{gang("w", 1, pods(1, whole, "h100"))})
	if pools[0].Nodes[0].Free != 8 {
		t.Fatal("Decide changed the pools it was given")
	}
}

func TestAddRequests(t *testing.T) {
	req := func(class string, mode resourcev1.DeviceAllocationMode, count int64) resourcev1.DeviceRequest {
		return resourcev1.DeviceRequest{Name: "r", Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: class, AllocationMode: mode, Count: count}}
	}
	cases := []struct {
		name string
		reqs []resourcev1.DeviceRequest
		want Demand
	}{
		{"count", []resourcev1.DeviceRequest{req("gpu.nvidia.com", "ExactCount", 8)}, Demand{GPUs: 8}},
		{"default count is one", []resourcev1.DeviceRequest{req("gpu.nvidia.com", "", 0)}, Demand{GPUs: 1}},
		{"All is a whole node", []resourcev1.DeviceRequest{req("gpu.nvidia.com", "All", 0)}, Demand{WholeNode: true}},
		{"other classes do not count", []resourcev1.DeviceRequest{req("mig.nvidia.com", "ExactCount", 2)}, Demand{}},
		{"requests add up", []resourcev1.DeviceRequest{req("gpu.nvidia.com", "", 2), req("gpu.nvidia.com", "", 3)}, Demand{GPUs: 5}},
		{"firstAvailable: the first subrequest of the class", []resourcev1.DeviceRequest{{Name: "r", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "a", DeviceClassName: "mig.nvidia.com", Count: 7},
			{Name: "b", DeviceClassName: "gpu.nvidia.com", AllocationMode: "ExactCount", Count: 2},
			{Name: "c", DeviceClassName: "gpu.nvidia.com", AllocationMode: "ExactCount", Count: 1},
		}}}, Demand{GPUs: 2}},
	}
	for _, c := range cases {
		if got := (Demand{}).AddRequests(c.reqs, "gpu.nvidia.com"); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
