// Command ck8s-sim-compute-domain simulates NVIDIA's ComputeDomain driver (kubernetes-sigs/
// dra-driver-nvidia-gpu, chart 0.5.0-dev at main 95932046) for the node tier, on nodes without
// GPUs, NVLink or IMEX. Two modes:
//
//	controller      cmd/compute-domain-controller: per ComputeDomain the channel
//	                ResourceClaimTemplate, finalizers, status from the ComputeDomainCliques.
//	kubelet-plugin  cmd/compute-domain-kubelet-plugin on one node (driver compute-domain.nvidia.com):
//	                publishes channel-0 and daemon-0, prepares channel claims (CDI spec injecting
//	                /dev/nvidia-caps-imex-channels/channel<N>) and does the node's IMEX daemon's
//	                bookkeeping (cmd/compute-domain-daemon: joins the clique, Ready).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// defaultCliqueID stands in for nvlib.go getCliqueID's "<ClusterUUID>.<CliqueId>" of a fabric-attached
// GPU: one simulated NVLink domain, clique 0.
const defaultCliqueID = "00000000-0000-0000-0000-000000000000.0"

type config struct {
	mode, nodeName, kubeconfig, namespace, cliqueID string
	pluginDataDir, registrarDir, cdiDir             string
	procDevices, faultFile                          string
}

func parseFlags(args []string) (config, error) {
	var c config
	if len(args) < 1 || (args[0] != "controller" && args[0] != "kubelet-plugin") {
		return c, errors.New("usage: ck8s-sim-compute-domain controller|kubelet-plugin [flags]")
	}
	c.mode = args[0]
	fs := flag.NewFlagSet(c.mode, flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster config)")
	fs.StringVar(&c.namespace, "namespace", "", "the driver's namespace, where ComputeDomainCliques live (required)")
	fs.StringVar(&c.nodeName, "node-name", "", "kubelet-plugin: this node's name; also the pool name")
	fs.StringVar(&c.cliqueID, "clique-id", defaultCliqueID, "kubelet-plugin: the simulated GPUs' NVLink clique ID")
	fs.StringVar(&c.pluginDataDir, "plugin-data-dir", "", "kubelet-plugin: kubelet's <root-dir>/plugins/compute-domain.nvidia.com")
	fs.StringVar(&c.registrarDir, "registrar-dir", "", "kubelet-plugin: kubelet's <root-dir>/plugins_registry")
	fs.StringVar(&c.cdiDir, "cdi-dir", "", "kubelet-plugin: directory for CDI spec files (containerd's cdi_spec_dirs)")
	fs.StringVar(&c.procDevices, "proc-devices", "/proc/devices", "kubelet-plugin: /proc/devices-format file naming nvidia-caps-imex-channels' major")
	fs.StringVar(&c.faultFile, "fault-file", "", "kubelet-plugin: test hook of this simulator, read on every prepare: no-imex-channel")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	klogFlags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	if err := fs.Parse(args[1:]); err != nil {
		return c, err
	}
	if c.namespace == "" {
		return c, errors.New("--namespace is required")
	}
	if c.mode == "kubelet-plugin" {
		if c.nodeName == "" {
			return c, errors.New("--node-name is required")
		}
		for name, p := range map[string]string{"--plugin-data-dir": c.pluginDataDir, "--registrar-dir": c.registrarDir,
			"--cdi-dir": c.cdiDir, "--proc-devices": c.procDevices} {
			if !filepath.IsAbs(p) {
				return c, fmt.Errorf("%s must be an absolute path, got %q", name, p)
			}
		}
	}
	return c, nil
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(c); err != nil {
		klog.ErrorS(err, "ck8s-sim-compute-domain failed", "mode", c.mode)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func newCluster(kubeconfig string) (*cluster, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{core: core, dyn: dyn}, nil
}

func run(c config) error {
	cl, err := newCluster(c.kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if c.mode == "controller" {
		klog.InfoS("ComputeDomain controller running", "namespace", c.namespace)
		return (&controller{c: cl, namespace: c.namespace}).run(ctx)
	}
	return runPlugin(ctx, c, cl)
}

func runPlugin(ctx context.Context, c config, cl *cluster) error {
	major, err := readDeviceMajor(c.procDevices) // nvlib.go getNVCapIMEXChannelDeviceInfo
	if err != nil {
		return fmt.Errorf("error getting device major: %w", err)
	}
	for _, dir := range []string{c.pluginDataDir, c.registrarDir, c.cdiDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	p := &plugin{c: cl, nodeName: c.nodeName, namespace: c.namespace, cliqueID: c.cliqueID, cdiDir: c.cdiDir,
		faultFile: c.faultFile, major: major, prepared: map[types.UID]preparedClaim{}}
	// Upstream turns the helper's serialization off and runs its own work queue with retries
	// (driver.go); this simulator's prepares never wait on each other, so the default serial
	// helper is enough.
	helper, err := kubeletplugin.Start(ctx, p,
		kubeletplugin.KubeClient(cl.core),
		kubeletplugin.NodeName(c.nodeName),
		kubeletplugin.DriverName(driverName),
		kubeletplugin.RegistrarDirectoryPath(c.registrarDir),
		kubeletplugin.PluginDataDirectoryPath(c.pluginDataDir),
	)
	if err != nil {
		return fmt.Errorf("start kubelet plugin: %w", err)
	}
	defer helper.Stop()
	// driver.go NewDriver: one slice, pool = node name.
	err = helper.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		c.nodeName: {Slices: []resourceslice.Slice{{Devices: publishedDevices()}}},
	}})
	if err != nil {
		return fmt.Errorf("error in PublishResources(): %w", err)
	}
	klog.InfoS("Kubelet plugin running", "driver", driverName, "node", c.nodeName, "imexMajor", major, "clique", c.cliqueID)
	<-ctx.Done()
	klog.InfoS("Stopping on signal")
	return nil
}
