// Command pulumi-language-python is ck8s-gpu's own minimal Pulumi language host for Python.
//
// The upstream host (module github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3)
// is not served by the Go module proxy this project can reach, so the Pulumi CLI built by
// tools/build.sh gets this small stand-in. It supports what `pulumi preview/up/destroy` and the
// Automation API need to run a Python program: it starts the interpreter (the project's
// virtualenv from Pulumi.yaml `runtime.options.virtualenv`, else $PULUMI_PYTHON_CMD, else
// python3) on runner.py, which configures the Pulumi runtime and runs the program. It does not
// install dependencies, report program dependencies or generate code.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

//go:embed runner.py
var runner string

// version is set with -ldflags "-X main.version=..." by tools/build.sh.
var version = "0.0.0-dev"

// bailExitCode is what runner.py returns after printing an actionable error.
const bailExitCode = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engine string
}

func main() {
	// The engine passes its own address as the last positional argument, possibly after flags.
	flag.String("tracing", "", "ignored")
	flag.String("root", "", "ignored")
	flag.Parse()
	h := &host{engine: flag.Arg(0)}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python: %v\n", err)
		os.Exit(1)
	}
	// The engine reads the port from our first line of stdout.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python: %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engine = req.GetEngineAddress()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// Plugins are resolved when the program registers resources (they are pre-installed offline).
func (h *host) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) GetProgramDependencies(
	context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *host) RuntimeOptionsPrompts(
	context.Context, *pulumirpc.RuntimeOptionsRequest,
) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

// Dependencies are the project's business (pip install into its venv before running Pulumi).
func (h *host) InstallDependencies(
	*pulumirpc.InstallDependenciesRequest,
	grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	return nil
}

func (h *host) About(_ context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	python := interpreter(req.GetInfo())
	out, err := exec.Command(python, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", python, err)
	}
	v := strings.TrimSpace(strings.TrimPrefix(string(out), "Python "))
	return &pulumirpc.AboutResponse{Executable: python, Version: v}, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	program := req.GetProgram()
	if info != nil && info.GetProgramDirectory() != "" {
		program = info.GetProgramDirectory()
		if ep := info.GetEntryPoint(); ep != "" && ep != "." {
			program = filepath.Join(program, ep)
		}
	}
	engine := h.engine
	args := []string{
		"-u", "-c", runner,
		"--monitor", req.GetMonitorAddress(),
		"--engine", engine,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--organization", req.GetOrganization(),
		"--root-directory", info.GetRootDirectory(),
		"--pwd", req.GetPwd(),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
		"--dry-run", strconv.FormatBool(req.GetDryRun()),
		program,
	}
	args = append(args, req.GetArgs()...)

	cfg, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secrets := req.GetConfigSecretKeys()
	if secrets == nil {
		secrets = []string{}
	}
	secretKeys, err := json.Marshal(secrets)
	if err != nil {
		return nil, err
	}

	python := interpreter(info)
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"PULUMI_CONFIG="+string(cfg),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys),
		"PYTHONUNBUFFERED=1",
	)
	if venv := virtualenv(info); venv != "" {
		cmd.Env = append(cmd.Env, "VIRTUAL_ENV="+venv,
			"PATH="+filepath.Join(venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if exit.ExitCode() == bailExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exit.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("running %s: %v", python, err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// virtualenv is runtime.options.virtualenv of Pulumi.yaml, made absolute against the project root.
func virtualenv(info *pulumirpc.ProgramInfo) string {
	opts := info.GetOptions()
	if opts == nil {
		return ""
	}
	v, ok := opts.GetFields()["virtualenv"]
	if !ok {
		return ""
	}
	s, ok := v.GetKind().(*structpb.Value_StringValue)
	if !ok || s.StringValue == "" {
		return ""
	}
	venv := s.StringValue
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(info.GetRootDirectory(), venv)
	}
	return venv
}

func interpreter(info *pulumirpc.ProgramInfo) string {
	if venv := virtualenv(info); venv != "" {
		return filepath.Join(venv, "bin", "python")
	}
	if cmd := os.Getenv("PULUMI_PYTHON_CMD"); cmd != "" {
		return cmd
	}
	return "python3"
}
