package main

// The slice of NVIDIA's ComputeDomain API this simulator reads and writes, written from
// kubernetes-sigs/dra-driver-nvidia-gpu (main 95932046 = chart 0.5.0-dev; "upstream" below).

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

const (
	// cmd/compute-domain-kubelet-plugin/main.go and cmd/compute-domain-controller/main.go: DriverName.
	driverName = "compute-domain.nvidia.com"

	// api/nvidia.com/resource/v1beta1/api.go.
	groupName         = "resource.nvidia.com"
	apiVersion        = "v1beta1"
	channelConfigKind = "ComputeDomainChannelConfig"
	daemonConfigKind  = "ComputeDomainDaemonConfig"

	// api/nvidia.com/resource/v1beta1/computedomain.go.
	statusReady          = "Ready"
	statusNotReady       = "NotReady"
	allocationModeSingle = "Single"
	allocationModeAll    = "All"

	// cmd/compute-domain-controller/computedomain.go constants.
	computeDomainLabelKey     = "resource.nvidia.com/computeDomain"
	cliqueLabelKey            = "resource.nvidia.com/computeDomain.cliqueID"
	computeDomainFinalizer    = computeDomainLabelKey
	defaultChannelDeviceClass = "compute-domain-default-channel.nvidia.com"
	daemonDeviceClass         = "compute-domain-daemon.nvidia.com"
	targetLabelKey            = "resource.nvidia.com/computeDomainTarget"
	targetWorkload            = "Workload"

	// cmd/compute-domain-kubelet-plugin/types.go.
	channelType = "channel"
	daemonType  = "daemon"

	// cmd/compute-domain-kubelet-plugin/nvlib.go getImexChannelCount: a constant upstream too.
	maxImexChannelCount = 2048
	// cmd/compute-domain-controller/main.go defaultMaxNodesPerIMEXDomain (the daemon's index limit).
	maxNodesPerIMEXDomain = 18
)

var (
	cdGVR     = schema.GroupVersionResource{Group: groupName, Version: apiVersion, Resource: "computedomains"}
	cliqueGVR = schema.GroupVersionResource{Group: groupName, Version: apiVersion, Resource: "computedomaincliques"}
)

// ComputeDomain mirrors computedomain.go's ComputeDomain (the fields used here).
type ComputeDomain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ComputeDomainSpec   `json:"spec,omitempty"`
	Status            ComputeDomainStatus `json:"status,omitempty"`
}

type ComputeDomainSpec struct {
	NumNodes int                       `json:"numNodes,omitempty"`
	Channel  *ComputeDomainChannelSpec `json:"channel"`
}

type ComputeDomainChannelSpec struct {
	ResourceClaimTemplate struct {
		Name string `json:"name"`
	} `json:"resourceClaimTemplate"`
	AllocationMode string `json:"allocationMode,omitempty"`
}

type ComputeDomainStatus struct {
	Status string               `json:"status"`
	Nodes  []*ComputeDomainNode `json:"nodes,omitempty"`
}

type ComputeDomainNode struct {
	Name      string `json:"name"`
	IPAddress string `json:"ipAddress"`
	CliqueID  string `json:"cliqueID"`
	Index     int    `json:"index"`
	Status    string `json:"status,omitempty"`
}

// ComputeDomainClique mirrors computedomainclique.go.
type ComputeDomainClique struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Daemons           []*ComputeDomainDaemonInfo `json:"daemons,omitempty"`
}

type ComputeDomainDaemonInfo struct {
	NodeName  string `json:"nodeName"`
	IPAddress string `json:"ipAddress"`
	CliqueID  string `json:"cliqueID"`
	Index     int    `json:"index"`
	Status    string `json:"status,omitempty"`
}

// ComputeDomainChannelConfig and ComputeDomainDaemonConfig mirror computedomainconfig.go; the Go
// type names are the kinds (runtime.Scheme.AddKnownTypes registers by type name).
type ComputeDomainChannelConfig struct {
	metav1.TypeMeta `json:",inline"`
	DomainID        string `json:"domainID"`
	AllocationMode  string `json:"allocationMode,omitempty"`
}

type ComputeDomainDaemonConfig struct {
	metav1.TypeMeta `json:",inline"`
	DomainID        string `json:"domainID"`
}

func (c *ComputeDomainChannelConfig) DeepCopyObject() runtime.Object { o := *c; return &o }
func (c *ComputeDomainDaemonConfig) DeepCopyObject() runtime.Object  { o := *c; return &o }

// validateDomainID is both configs' Validate (computedomainconfig.go).
func validateDomainID(id string) error {
	if id == "" {
		return errorf("domainID cannot be empty")
	}
	return nil
}

// strictDecoder is api.go's StrictDecoder: a JSON serializer over a scheme of the group's kinds that
// fails on unknown fields and on an unknown apiVersion/kind. Upstream's scheme also knows GpuConfig,
// MigDeviceConfig and VfioDeviceConfig, which then fail in prepareDevices ("runtime object is not a
// recognized configuration"); here they fail in the decoder: refused either way.
var strictDecoder runtime.Decoder

func init() {
	scheme := runtime.NewScheme()
	gv := schema.GroupVersion{Group: groupName, Version: apiVersion}
	scheme.AddKnownTypes(gv, &ComputeDomainChannelConfig{}, &ComputeDomainDaemonConfig{})
	metav1.AddToGroupVersion(scheme, gv)
	strictDecoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Strict: true})
}
