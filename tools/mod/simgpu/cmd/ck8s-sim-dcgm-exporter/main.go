// Command ck8s-sim-dcgm-exporter is the node tier's stand-in for NVIDIA's dcgm-exporter with its
// DRA pod mapping on (KUBERNETES_ENABLE_DRA): on every scrape it reads the node's simulated GPU
// table (the GPU plugin's gpus.json), asks the kubelet's pod-resources API which container holds
// which device through which ResourceClaim (as the real exporter does: kubernetes.go
// toDeviceToPodsDRA, k8s.io/kubelet podresources/v1 List), and renders internal/dcgm's series.
//
// What no simulator can read is what a GPU is doing: the pod holding a device declares it in the
// annotation ck8s-gpu.io/sim-gpu-activity (0..1, default 0), so a scripted workload has known
// busy and idle GPU time. Devices are found by name in the devices file the plugin publishes (the
// real exporter reads the same devices from the ResourceSlices).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"

	"ck8s-gpu.local/tools/simgpu/internal/dcgm"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

const (
	activityAnnotation = "ck8s-gpu.io/sim-gpu-activity"
	driverName         = "gpu.nvidia.com" // the real exporter's DRA driver filter (transformation/const.go)
)

type exporter struct {
	node, driverVersion, table, devicesFile, socket string
	pods                                            kubernetes.Interface
}

// deviceKeys maps a published device's name to the key of its entity (dcgm.Entity.Key): its
// uuid, which for a MIG device is the MIG UUID.
func deviceKeys(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Devices []resourceapi.Device `json:"devices"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	out := map[string]string{}
	for _, d := range f.Devices {
		if a, ok := d.Attributes["uuid"]; ok && a.StringValue != nil {
			out[d.Name] = *a.StringValue
		}
	}
	return out, nil
}

func (x *exporter) holders(ctx context.Context) (map[string][]dcgm.Holder, error) {
	keys, err := deviceKeys(x.devicesFile)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("unix://"+x.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	resp, err := podresources.NewPodResourcesListerClient(conn).List(ctx, &podresources.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("pod-resources List: %w", err)
	}
	out := map[string][]dcgm.Holder{}
	activity := map[string]float64{}
	for _, pod := range resp.GetPodResources() {
		for _, c := range pod.GetContainers() {
			for _, dr := range c.GetDynamicResources() {
				for _, cr := range dr.GetClaimResources() {
					key, ok := keys[cr.GetDeviceName()]
					if cr.GetDriverName() != driverName || cr.GetPoolName() != x.node || !ok {
						continue
					}
					id := pod.GetNamespace() + "/" + pod.GetName()
					if _, seen := activity[id]; !seen {
						activity[id] = x.activity(ctx, pod.GetNamespace(), pod.GetName())
					}
					out[key] = append(out[key], dcgm.Holder{
						Pod: pod.GetName(), Namespace: pod.GetNamespace(), Container: c.GetName(),
						ClaimName: dr.GetClaimName(), ClaimNamespace: dr.GetClaimNamespace(),
						Driver: cr.GetDriverName(), Pool: cr.GetPoolName(), Device: cr.GetDeviceName(),
						Activity: activity[id],
					})
				}
			}
		}
	}
	return out, nil
}

// activity is the pod's declared activity; a pod gone or without the annotation is idle.
func (x *exporter) activity(ctx context.Context, namespace, name string) float64 {
	pod, err := x.pods.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0
	}
	v, err := strconv.ParseFloat(pod.Annotations[activityAnnotation], 64)
	if err != nil {
		return 0
	}
	return v
}

func (x *exporter) metrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	t, err := gputable.Read(x.table)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	hs, err := x.holders(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, dcgm.Render(x.node, x.driverVersion, t, hs))
}

func main() {
	x := &exporter{}
	var kubeconfig, listen string
	flag.StringVar(&x.node, "node-name", "", "the node (hostname label, and the DRA pool of its devices)")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig to read pods' annotations with")
	flag.StringVar(&x.table, "gpu-table", "", "the GPU plugin's gpus.json")
	flag.StringVar(&x.devicesFile, "devices-file", "", "the devices the GPU plugin publishes")
	flag.StringVar(&x.socket, "pod-resources-socket", "", "the kubelet's pod-resources socket")
	flag.StringVar(&listen, "listen", "", "address:port to serve /metrics on")
	flag.StringVar(&x.driverVersion, "driver-version", "580.95.05", "DCGM_FI_DRIVER_VERSION")
	flag.Parse()
	for name, v := range map[string]string{"node-name": x.node, "kubeconfig": kubeconfig, "gpu-table": x.table,
		"devices-file": x.devicesFile, "pod-resources-socket": x.socket, "listen": listen} {
		if v == "" {
			fmt.Fprintf(os.Stderr, "--%s is required\n", name)
			os.Exit(2)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		log.Fatalf("kubeconfig: %v", err)
	}
	if x.pods, err = kubernetes.NewForConfig(cfg); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", x.metrics)
	log.Printf("serving /metrics on %s for node %s", ln.Addr(), x.node)
	log.Fatal(http.Serve(ln, mux))
}
