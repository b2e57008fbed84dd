// Command ck8s-gpu-kubelet-plugin is a DRA kubelet plugin (driver gpu.nvidia.com) that
// simulates NVIDIA GPUs on a node without any: it publishes the devices it is given, makes
// inert /dev/nvidia* nodes, and on prepare writes a per-claim CDI spec shaped like NVIDIA's
// (github.com/NVIDIA/k8s-dra-driver-gpu v0.4.0) that gives the container the allocated GPUs'
// device nodes and a simulated nvidia-smi.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"ck8s-gpu.local/tools/simgpu/internal/claimspec"
	"ck8s-gpu.local/tools/simgpu/internal/fabric"
	"ck8s-gpu.local/tools/simgpu/internal/featuregate"
	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

type config struct {
	nodeName, kubeconfig, devicesFile      string
	pluginDataDir, registrarDir, cdiDir    string
	devDir, nvidiaSMI, stateDir, faultFile string
	fabricFile                             string
	gates                                  featuregate.Gates
}

func parseFlags() (config, error) {
	var c config
	flag.StringVar(&c.nodeName, "node-name", "", "this node's name (required); also the pool name")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster config)")
	flag.StringVar(&c.devicesFile, "devices-file", "", `JSON {"devices": [resource.k8s.io/v1 Device...]} to publish`)
	flag.StringVar(&c.pluginDataDir, "plugin-data-dir", "", "kubelet's <root-dir>/plugins/gpu.nvidia.com")
	flag.StringVar(&c.registrarDir, "registrar-dir", "", "kubelet's <root-dir>/plugins_registry")
	flag.StringVar(&c.cdiDir, "cdi-dir", "", "directory for CDI spec files (containerd's cdi_spec_dirs)")
	flag.StringVar(&c.devDir, "dev-dir", "", "host directory for the simulated nvidia<minor> and nvidiactl nodes")
	flag.StringVar(&c.nvidiaSMI, "nvidia-smi", "", "host path of the simulated nvidia-smi binary")
	flag.StringVar(&c.stateDir, "state-dir", "", "directory for gpus.json, the node's GPU table")
	flag.StringVar(&c.faultFile, "fault-file", "", "test hook of this simulator, read on every prepare: cdi-refused | wrong-device | unhealthy")
	flag.StringVar(&c.fabricFile, "fabric-partitions-file", "",
		`simulated Fabric Manager: JSON {"partitions": [{"id": N, "gpuModuleIDs": [...]}]}; none: no NVSwitch fabric`)
	gates := flag.String("feature-gates", "", "A set of key=value pairs that describe feature gates for alpha/experimental features. "+
		"Options are: "+strings.Join(featuregate.Known(), ", "))
	klog.InitFlags(nil)
	flag.Parse()

	var err error
	if c.gates, err = featuregate.Parse(*gates); err != nil {
		return c, fmt.Errorf("--feature-gates: %w", err)
	}

	if c.nodeName == "" {
		return c, errors.New("--node-name is required")
	}
	for name, p := range map[string]string{
		"--devices-file": c.devicesFile, "--plugin-data-dir": c.pluginDataDir, "--registrar-dir": c.registrarDir,
		"--cdi-dir": c.cdiDir, "--dev-dir": c.devDir, "--nvidia-smi": c.nvidiaSMI, "--state-dir": c.stateDir,
	} {
		if !filepath.IsAbs(p) {
			return c, fmt.Errorf("%s must be an absolute path, got %q", name, p)
		}
	}
	for name, p := range map[string]string{"--kubeconfig": c.kubeconfig, "--fault-file": c.faultFile, "--fabric-partitions-file": c.fabricFile} {
		if p != "" && !filepath.IsAbs(p) {
			return c, fmt.Errorf("%s must be an absolute path, got %q", name, p)
		}
	}
	return c, nil
}

func main() {
	c, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(c); err != nil {
		klog.ErrorS(err, "ck8s-gpu-kubelet-plugin failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(c config) error {
	file, err := loadDevices(c.devicesFile)
	if err != nil {
		return err
	}
	devs := file.Devices
	nd, err := buildTable(file)
	if err != nil {
		return err
	}
	table := nd.table
	mods, err := moduleIDs(devs)
	if err != nil {
		return err
	}
	fab, err := loadFabric(c)
	if err != nil {
		return err
	}
	// The helper requires both kubelet directories to exist (kubeletplugin option docs).
	for _, dir := range []string{c.pluginDataDir, c.registrarDir, c.cdiDir, c.stateDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tablePath := filepath.Join(c.stateDir, "gpus.json")
	if err := gputable.Write(tablePath, table); err != nil {
		return err
	}
	if err := makeDevNodes(c.devDir, table); err != nil {
		return err
	}

	var restCfg *rest.Config
	if c.kubeconfig != "" {
		restCfg, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	} else {
		restCfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}

	// SIGTERM/SIGINT cancel ctx; then Stop tears down the gRPC servers, whose listeners
	// remove the sockets, so the kubelet sees the plugin go away.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	drv := &driver{
		nodeName:  c.nodeName,
		cdiDir:    c.cdiDir,
		faultFile: c.faultFile,
		paths:     claimspec.HostPaths{DevDir: c.devDir, NvidiaSMI: c.nvidiaSMI, GPUTable: tablePath},
		minors:    nd.minors,
		mig:       nd.mig,
		allMinors: table.Minors(),
		gates:     c.gates,
		fabric:    fab,
		moduleIDs: mods,
		devices:   devs,
	}
	helper, err := kubeletplugin.Start(ctx, drv,
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(c.nodeName),
		kubeletplugin.DriverName(driverName),
		kubeletplugin.RegistrarDirectoryPath(c.registrarDir),
		kubeletplugin.PluginDataDirectoryPath(c.pluginDataDir),
	)
	if err != nil {
		return fmt.Errorf("start kubelet plugin: %w", err)
	}
	defer helper.Stop()

	// One slice, pool = node name, devices unchanged (NVIDIA's driver.go publishResources);
	// a health event republishes the same way (driver.go deviceHealthEvents).
	publish := func(ctx context.Context, devs []resourceapi.Device) error {
		return helper.PublishResources(ctx, resourceslice.DriverResources{
			Pools: map[string]resourceslice.Pool{
				c.nodeName: {Slices: []resourceslice.Slice{{Devices: devs}}},
			},
		})
	}
	drv.mu.Lock()
	drv.publish = publish
	err = publish(ctx, drv.devices)
	drv.mu.Unlock()
	if err != nil {
		return fmt.Errorf("publish resources: %w", err)
	}
	klog.InfoS("Kubelet plugin running", "driver", driverName, "node", c.nodeName, "gpus", len(devs),
		"fabricManagerPartitioning", fab != nil, "deviceHealthCheck", c.gates.Enabled(featuregate.NVMLDeviceHealthCheck))

	<-ctx.Done()
	klog.InfoS("Stopping on signal")
	return nil
}

// loadFabric opens the simulated Fabric Manager as device_state.go newFabricManager does:
// nothing unless FabricManagerPartitioning is on; no table file stands for "no NVSwitch
// fabric detected on this node" (partitioning skipped); a table that cannot be read fails
// startup ("Fabric Manager could not be opened").
func loadFabric(c config) (*fabric.Table, error) {
	if !c.gates.Enabled(featuregate.FabricManagerPartitioning) {
		if c.fabricFile != "" {
			klog.InfoS("Fabric partitions file ignored: feature gate FabricManagerPartitioning is off", "file", c.fabricFile)
		}
		return nil, nil
	}
	if c.fabricFile == "" {
		klog.InfoS("FabricManagerPartitioning enabled but no NVSwitch/NVLink5 fabric detected on this node; skipping Fabric Manager")
		return nil, nil
	}
	t, err := fabric.Load(c.fabricFile)
	if err != nil {
		return nil, fmt.Errorf("FabricManagerPartitioning enabled but Fabric Manager could not be opened: %w", err)
	}
	return &t, nil
}
