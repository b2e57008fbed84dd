// Package smi is the simulated nvidia-smi: it learns which GPUs a container has only from
// the /dev/nvidia<minor> character devices it can see (as the real one learns it from the
// driver), and names them from the node's GPU table.
//
// Messages and exit codes follow the real tool: nvidia-smi(1), RETURN VALUE: 2 = a supplied
// argument or flag is invalid, 6 = a query to find an object was unsuccessful, 9 = NVIDIA
// driver is not loaded. Like the real tool it prints its errors on stdout.
package smi

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"ck8s-gpu.local/tools/simgpu/internal/gputable"
)

const (
	ExitOK         = 0
	ExitInvalidArg = 2
	ExitNotFound   = 6
	ExitNoDriver   = 9

	nvidiaMajor = 195
	ctlMinor    = 255

	// DefaultTable is where the CDI spec mounts the node's table; TableEnv overrides it (tests).
	DefaultTable = "/run/nvidia-sim/gpus.json"
	TableEnv     = "CK8S_SIM_GPU_TABLE"

	msgNoDriver  = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
	msgNoDevices = "No devices were found"
	msgBadArgs   = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
)

// DevInfo is what stat tells about a /dev entry.
type DevInfo struct {
	CharDev      bool
	Major, Minor uint32
}

// StatFunc stats a path; tests pass a fake so they need no mknod.
type StatFunc func(path string) (DevInfo, error)

// Env is the world nvidia-smi looks at.
type Env struct {
	DevDir    string // /dev in the real binary
	Stat      StatFunc
	TablePath string
}

var (
	gpuNode = regexp.MustCompile(`^nvidia[0-9]+$`)
	capNode = regexp.MustCompile(`^nvidia-cap[0-9]+$`)
)

// capMinors returns the minors of the nvidia-caps nodes in devDir/nvidia-caps (none when the
// directory is absent: a container given no MIG device has none).
func capMinors(devDir string, stat StatFunc) map[uint32]bool {
	dir := filepath.Join(devDir, "nvidia-caps")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[uint32]bool{}
	for _, e := range entries {
		if !capNode.MatchString(e.Name()) {
			continue
		}
		info, err := stat(filepath.Join(dir, e.Name()))
		if err == nil && info.CharDev && info.Major == gputable.CapsMajor {
			out[info.Minor] = true
		}
	}
	return out
}

// Visible is what the container sees: its GPUs in nvidia-smi order, and for each the MIG devices
// whose GI and CI capability nodes it was given (a MIG device needs both, as CUDA does).
type Visible struct {
	GPUs []gputable.GPU
	MIG  map[uint32][]gputable.MIG // parent minor -> its visible MIG devices
}

// Enumerate returns the minors of the GPU device nodes in devDir, ascending: entries named
// nvidia<digits> that are character devices of major 195. The minor comes from stat, not
// from the name, as the kernel driver identifies a GPU by the node's device number.
func Enumerate(devDir string, stat StatFunc) ([]uint32, error) {
	entries, err := os.ReadDir(devDir)
	if err != nil {
		return nil, err
	}
	seen := map[uint32]bool{}
	var minors []uint32
	for _, e := range entries {
		if !gpuNode.MatchString(e.Name()) {
			continue
		}
		info, err := stat(filepath.Join(devDir, e.Name()))
		if err != nil || !info.CharDev || info.Major != nvidiaMajor || info.Minor == ctlMinor {
			continue
		}
		if !seen[info.Minor] {
			seen[info.Minor] = true
			minors = append(minors, info.Minor)
		}
	}
	sort.Slice(minors, func(i, j int) bool { return minors[i] < minors[j] })
	return minors, nil
}

// visible resolves the container's GPUs in nvidia-smi order (ascending minor, indexed from
// 0); on failure it returns the message to print and the exit code.
func visible(env Env) (Visible, string, int) {
	gpus, table, msg, code := visibleGPUs(env)
	if code != ExitOK {
		return Visible{}, msg, code
	}
	caps := capMinors(env.DevDir, env.Stat)
	v := Visible{GPUs: gpus, MIG: map[uint32][]gputable.MIG{}}
	for _, g := range gpus {
		for _, m := range table.MIGOf(g.Minor) {
			if caps[m.GICapMinor] && caps[m.CICapMinor] {
				v.MIG[g.Minor] = append(v.MIG[g.Minor], m)
			}
		}
	}
	return v, "", ExitOK
}

func visibleGPUs(env Env) ([]gputable.GPU, gputable.Table, string, int) {
	ctl, err := env.Stat(filepath.Join(env.DevDir, "nvidiactl"))
	if err != nil || !ctl.CharDev || ctl.Major != nvidiaMajor || ctl.Minor != ctlMinor {
		return nil, gputable.Table{}, msgNoDriver, ExitNoDriver
	}
	table, err := gputable.Read(env.TablePath)
	if err != nil {
		return nil, gputable.Table{}, msgNoDriver, ExitNoDriver
	}
	minors, err := Enumerate(env.DevDir, env.Stat)
	if err != nil {
		return nil, gputable.Table{}, msgNoDriver, ExitNoDriver
	}
	if len(minors) == 0 {
		return nil, gputable.Table{}, msgNoDevices, ExitNotFound
	}
	gpus := make([]gputable.GPU, 0, len(minors))
	for _, m := range minors {
		g, ok := table.ByMinor(m)
		if !ok {
			return nil, gputable.Table{}, fmt.Sprintf("Unable to determine the device handle for GPU with minor number %d: Unknown Error", m), ExitNoDriver
		}
		gpus = append(gpus, g)
	}
	return gpus, table, "", ExitOK
}

// ListGPUs is `nvidia-smi -L`: "GPU <i>: <name> (UUID: <uuid>)", i counting visible GPUs, each
// followed by its visible MIG devices, "  MIG 1g.10gb     Device  0: (UUID: MIG-...)", counted
// per GPU (the layout of NVIDIA's own listings, e.g. dra-driver-nvidia-gpu's demo README).
func ListGPUs(v Visible) string {
	var b strings.Builder
	for i, g := range v.GPUs {
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", i, g.ProductName, g.UUID)
		for j, m := range v.MIG[g.Minor] {
			fmt.Fprintf(&b, "  MIG %-11s Device %2d: (UUID: %s)\n", m.Profile, j, m.UUID)
		}
	}
	return b.String()
}

// queryFields are the --query-gpu fields we know: header name and value for the i-th visible
// GPU. "index" is the position among visible GPUs, as NVML numbers them inside a container.
var queryFields = map[string]func(i int, g gputable.GPU, units bool) string{
	"index": func(i int, _ gputable.GPU, _ bool) string { return strconv.Itoa(i) },
	"uuid":  func(_ int, g gputable.GPU, _ bool) string { return g.UUID },
	"name":  func(_ int, g gputable.GPU, _ bool) string { return g.ProductName },
	"memory.total": func(_ int, g gputable.GPU, units bool) string {
		if units {
			return fmt.Sprintf("%d MiB", g.MemoryMiB)
		}
		return strconv.FormatInt(g.MemoryMiB, 10)
	},
}

// Query is --query-gpu with --format=csv[,noheader][,nounits]: ", "-separated like the real tool.
func Query(gpus []gputable.GPU, fields []string, header, units bool) string {
	var b strings.Builder
	if header {
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f
			if f == "memory.total" && units {
				names[i] += " [MiB]"
			}
		}
		b.WriteString(strings.Join(names, ", ") + "\n")
	}
	for i, g := range gpus {
		vals := make([]string, len(fields))
		for j, f := range fields {
			vals[j] = queryFields[f](i, g, units)
		}
		b.WriteString(strings.Join(vals, ", ") + "\n")
	}
	return b.String()
}

type request struct {
	list          bool
	fields        []string
	header, units bool
}

// parseArgs accepts -L/--list-gpus, or --query-gpu=F,... with --format=csv[,noheader][,nounits]
// (also as two words). No argument lists the GPUs: the real default is a status table we do
// not simulate.
func parseArgs(args []string) (request, string) {
	r := request{header: true, units: true}
	var query, format string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if (name == "--query-gpu" || name == "--format") && !hasVal {
			if i+1 == len(args) {
				return r, msgBadArgs
			}
			i++
			val = args[i]
		}
		switch name {
		case "-L", "--list-gpus":
			if hasVal {
				return r, msgBadArgs
			}
			r.list = true
		case "--query-gpu":
			query = val
		case "--format":
			format = val
		default:
			return r, msgBadArgs
		}
	}
	if r.list && (query != "" || format != "") {
		return r, msgBadArgs
	}
	if query == "" && format == "" {
		r.list = true
		return r, ""
	}
	if query == "" || format == "" {
		return r, msgBadArgs
	}
	for _, f := range strings.Split(query, ",") {
		f = strings.TrimSpace(f)
		if _, ok := queryFields[f]; !ok {
			return r, fmt.Sprintf("Field \"%s\" is not a valid field to query.", f)
		}
		r.fields = append(r.fields, f)
	}
	opts := strings.Split(format, ",")
	if strings.TrimSpace(opts[0]) != "csv" {
		return r, fmt.Sprintf("\"%s\" is not a valid format.", format)
	}
	for _, o := range opts[1:] {
		switch strings.TrimSpace(o) {
		case "noheader":
			r.header = false
		case "nounits":
			r.units = false
		default:
			return r, fmt.Sprintf("\"%s\" is not a valid format.", format)
		}
	}
	return r, ""
}

// Run is the whole program: it writes to stdout and returns the exit code.
func Run(args []string, env Env, stdout io.Writer) int {
	req, msg := parseArgs(args)
	if msg != "" {
		fmt.Fprintln(stdout, msg)
		return ExitInvalidArg
	}
	v, msg, code := visible(env)
	if code != ExitOK {
		fmt.Fprintln(stdout, msg)
		return code
	}
	if req.list {
		io.WriteString(stdout, ListGPUs(v))
	} else {
		io.WriteString(stdout, Query(v.GPUs, req.fields, req.header, req.units))
	}
	return ExitOK
}
