package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"sigs.k8s.io/yaml"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

const (
	testNode = "node-a"
	testNS   = "driver-ns"
	cdUID    = "11111111-2222-3333-4444-555555555555"
)

func testCD(ns string) *ComputeDomain {
	cd := &ComputeDomain{
		TypeMeta:   metav1.TypeMeta{APIVersion: groupName + "/" + apiVersion, Kind: "ComputeDomain"},
		ObjectMeta: metav1.ObjectMeta{Name: "cd", Namespace: ns, UID: cdUID},
		Spec:       ComputeDomainSpec{NumNodes: 2, Channel: &ComputeDomainChannelSpec{AllocationMode: allocationModeSingle}},
	}
	cd.Spec.Channel.ResourceClaimTemplate.Name = "imex-channel-0"
	return cd
}

func newTestPlugin(t *testing.T, cds ...*ComputeDomain) *plugin {
	t.Helper()
	scheme := runtime.NewScheme()
	var objs []runtime.Object
	for _, cd := range cds {
		u, err := toUnstructured(cd)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		cdGVR: "ComputeDomainList", cliqueGVR: "ComputeDomainCliqueList",
	}, objs...)
	core := k8sfake.NewClientset(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.0.1"}}},
	})
	return &plugin{c: &cluster{core: core, dyn: dyn}, nodeName: testNode, namespace: testNS, cliqueID: defaultCliqueID,
		cdiDir: t.TempDir(), major: 60, prepared: map[types.UID]preparedClaim{}}
}

func channelClaim(uid, ns, params string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: ns, UID: types.UID(uid)}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{Request: "channel", Driver: driverName, Pool: testNode, Device: "channel-0"}},
	}}
	if params != "" {
		c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{
			Source: resourceapi.AllocationConfigSourceClaim, Requests: []string{"channel"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: driverName, Parameters: runtime.RawExtension{Raw: []byte(params)}}},
		}}
	}
	return c
}

func goodParams(domain string) string {
	return `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"` + domain + `","allocationMode":"Single"}`
}

func prepareOne(t *testing.T, p *plugin, c *resourceapi.ResourceClaim) ([]string, error) {
	t.Helper()
	res, err := p.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	r := res[c.UID]
	var ids []string
	for _, d := range r.Devices {
		ids = append(ids, d.CDIDeviceIDs...)
	}
	return ids, r.Err
}

func TestPrepareInjectsChannelZeroAndJoinsTheClique(t *testing.T) {
	p := newTestPlugin(t, testCD("ws"))
	ids, err := prepareOne(t, p, channelClaim("claim-1", "ws", goodParams(cdUID)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "k8s.compute-domain.nvidia.com/claim=claim-1-channel-0"; len(ids) != 1 || ids[0] != want {
		t.Fatalf("CDI IDs %v, want [%s]", ids, want)
	}
	data, err := os.ReadFile(filepath.Join(p.cdiDir, "k8s.compute-domain.nvidia.com-claim_claim-1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdispec.Spec
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Kind != "k8s.compute-domain.nvidia.com/claim" || len(spec.Devices) != 1 || spec.Devices[0].Name != "claim-1-channel-0" {
		t.Fatalf("spec %+v", spec)
	}
	nodes := spec.Devices[0].ContainerEdits.DeviceNodes
	if len(nodes) != 1 || nodes[0].Path != "/dev/nvidia-caps-imex-channels/channel0" || nodes[0].Type != "c" ||
		nodes[0].Major != 60 || nodes[0].Minor != 0 || nodes[0].HostPath != "" || *nodes[0].FileMode != 0o666 {
		t.Fatalf("device nodes %+v", nodes[0])
	}
	node, _ := p.c.core.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if node.Labels[computeDomainLabelKey] != cdUID {
		t.Fatalf("node labels %v", node.Labels)
	}
	cliques, err := p.c.listCliques(context.Background(), testNS)
	if err != nil || len(cliques) != 1 || cliques[0].Name != cdUID+"."+defaultCliqueID {
		t.Fatalf("cliques %v %v", cliques, err)
	}
	d := cliques[0].Daemons
	if len(d) != 1 || d[0].NodeName != testNode || d[0].Status != statusReady || d[0].IPAddress != "10.250.0.1" || d[0].Index != 0 {
		t.Fatalf("daemons %+v", d)
	}
	// A second claim for channel 0 on this node is refused (assertImexChannelNotAllocated).
	if _, err := prepareOne(t, p, channelClaim("claim-2", "ws", goodParams(cdUID))); err == nil ||
		!strings.Contains(err.Error(), "channel 0 already allocated by claim claim-1") {
		t.Fatalf("second claim: %v", err)
	}
	// Unprepare: spec, label and clique entry go.
	res, _ := p.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: "claim-1"}})
	if res["claim-1"] != nil {
		t.Fatal(res["claim-1"])
	}
	if _, err := os.Stat(filepath.Join(p.cdiDir, "k8s.compute-domain.nvidia.com-claim_claim-1.yaml")); !os.IsNotExist(err) {
		t.Fatalf("spec still there: %v", err)
	}
	node, _ = p.c.core.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if _, ok := node.Labels[computeDomainLabelKey]; ok {
		t.Fatal("label left")
	}
	cliques, _ = p.c.listCliques(context.Background(), testNS)
	if len(cliques[0].Daemons) != 0 {
		t.Fatalf("daemons left %+v", cliques[0].Daemons)
	}
}

func TestPrepareRefusesWhatUpstreamRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ ns, params, want string }{
		"unknown domain":    {"ws", goodParams("99999999-0000-0000-0000-000000000000"), "ComputeDomain not found: 99999999"},
		"other namespace":   {"elsewhere", goodParams(cdUID), "namespace is different"},
		"wrong kind":        {"ws", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","domainID":"x"}`, "error decoding config parameters"},
		"wrong API version": {"ws", `{"apiVersion":"resource.nvidia.com/v1","kind":"ComputeDomainChannelConfig","domainID":"x"}`, "error decoding config parameters"},
		"unknown field":     {"ws", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"x","bogus":1}`, "unknown field"},
		"daemon config":     {"ws", `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainDaemonConfig","domainID":"x"}`, "cannot apply ComputeDomainDaemonConfig"},
		"no config":         {"ws", "", "domainID cannot be empty"},
	} {
		t.Run(name, func(t *testing.T) {
			p := newTestPlugin(t, testCD("ws"))
			_, err := prepareOne(t, p, channelClaim("c", tc.ns, tc.params))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if files, _ := os.ReadDir(p.cdiDir); len(files) != 0 {
				t.Fatalf("a refused prepare wrote %v", files)
			}
		})
	}
}

func TestNoIMEXChannelFaultPreparesWithoutTheChannel(t *testing.T) {
	p := newTestPlugin(t, testCD("ws"))
	p.faultFile = filepath.Join(t.TempDir(), "fault")
	if err := os.WriteFile(p.faultFile, []byte("no-imex-channel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err := prepareOne(t, p, channelClaim("c", "ws", goodParams(cdUID)))
	if err != nil || len(ids) != 0 {
		t.Fatalf("ids %v err %v", ids, err)
	}
	if files, _ := os.ReadDir(p.cdiDir); len(files) != 0 {
		t.Fatalf("fault wrote %v", files)
	}
}

func TestAllocationModeAllInjectsEveryChannel(t *testing.T) {
	e := channelEdits(60, allocationModeAll)
	if len(e.DeviceNodes) != maxImexChannelCount || e.DeviceNodes[2047].Path != "/dev/nvidia-caps-imex-channels/channel2047" || e.DeviceNodes[2047].Minor != 2047 {
		t.Fatalf("%d nodes", len(e.DeviceNodes))
	}
}

func TestWorkloadRCTShape(t *testing.T) {
	rct, err := workloadRCT(testCD("ws"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := yaml.Marshal(rct)
	want := `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  finalizers:
  - resource.nvidia.com/computeDomain
  labels:
    resource.nvidia.com/computeDomain: ` + cdUID + `
    resource.nvidia.com/computeDomainTarget: Workload
  name: imex-channel-0
  namespace: ws
spec:
  metadata: {}
  spec:
    devices:
      config:
      - opaque:
          driver: compute-domain.nvidia.com
          parameters:
            allocationMode: Single
            apiVersion: resource.nvidia.com/v1beta1
            domainID: ` + cdUID + `
            kind: ComputeDomainChannelConfig
        requests:
        - channel
      requests:
      - exactly:
          deviceClassName: compute-domain-default-channel.nvidia.com
        name: channel
`
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestGlobalStatus(t *testing.T) {
	ready := &ComputeDomainNode{Name: "a", Status: statusReady}
	notReady := &ComputeDomainNode{Name: "b", Status: statusNotReady}
	for _, tc := range []struct {
		num   int
		nodes []*ComputeDomainNode
		want  string
	}{
		{2, []*ComputeDomainNode{ready}, statusNotReady},
		{2, []*ComputeDomainNode{ready, {Name: "c", Status: statusReady}}, statusReady},
		{1, []*ComputeDomainNode{ready, notReady}, statusNotReady},
		{0, nil, statusReady},
	} {
		if got := globalStatus(tc.num, tc.nodes); got != tc.want {
			t.Errorf("globalStatus(%d, %d nodes) = %s, want %s", tc.num, len(tc.nodes), got, tc.want)
		}
	}
}

func TestPublishedDevicesAndMajor(t *testing.T) {
	devs := publishedDevices()
	if len(devs) != 2 || devs[0].Name != "channel-0" || *devs[0].Attributes["type"].StringValue != "channel" ||
		*devs[0].Attributes["id"].IntValue != 0 || devs[1].Name != "daemon-0" {
		t.Fatalf("%+v", devs)
	}
	if deviceType("channel-2047") != channelType || deviceType("channel-2048") != "" || deviceType("channel-01") != "" {
		t.Fatal("allocatable channel range")
	}
	m, err := deviceMajor("Character devices:\n 60 nvidia-caps-imex-channels-x\n 61 nvidia-caps-imex-channels\n\nBlock devices:\n", imexChannelsDeviceName)
	if err != nil || m != 61 {
		t.Fatalf("major %d %v", m, err)
	}
	if _, err := deviceMajor("Character devices:\n 1 mem\n\nBlock devices:\n", imexChannelsDeviceName); err == nil {
		t.Fatal("absent name accepted")
	}
}
