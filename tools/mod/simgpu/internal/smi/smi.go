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

var gpuNode = regexp.MustCompile(`^nvidia[0-9]+$`)

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
func visible(env Env) ([]gputable.GPU, string, int) {
	ctl, err := env.Stat(filepath.Join(env.DevDir, "nvidiactl"))
	if err != nil || !ctl.CharDev || ctl.Major != nvidiaMajor || ctl.Minor != ctlMinor {
		return nil, msgNoDriver, ExitNoDriver
	}
	table, err := gputable.Read(env.TablePath)
	if err != nil {
		return nil, msgNoDriver, ExitNoDriver
	}
	minors, err := Enumerate(env.DevDir, env.Stat)
	if err != nil {
		return nil, msgNoDriver, ExitNoDriver
	}
	if len(minors) == 0 {
		return nil, msgNoDevices, ExitNotFound
	}
	gpus := make([]gputable.GPU, 0, len(minors))
	for _, m := range minors {
		g, ok := table.ByMinor(m)
		if !ok {
			return nil, fmt.Sprintf("Unable to determine the device handle for GPU with minor number %d: Unknown Error", m), ExitNoDriver
		}
		gpus = append(gpus, g)
	}
	return gpus, "", ExitOK
}

// ListGPUs is `nvidia-smi -L`: "GPU <i>: <name> (UUID: <uuid>)", i counting visible GPUs.
func ListGPUs(gpus []gputable.GPU) string {
	var b strings.Builder
	for i, g := range gpus {
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", i, g.ProductName, g.UUID)
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
	gpus, msg, code := visible(env)
	if code != ExitOK {
		fmt.Fprintln(stdout, msg)
		return code
	}
	if req.list {
		io.WriteString(stdout, ListGPUs(gpus))
	} else {
		io.WriteString(stdout, Query(gpus, req.fields, req.header, req.units))
	}
	return ExitOK
}
