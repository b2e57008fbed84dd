// Package host is a Pulumi language host that only generates SDKs: `pulumi package gen-sdk
// --language <lang>` asks the language's host for the SDK (pkg/cmd/pulumi/packages/packages.go
// GenSDK of pulumi v3.274.1 calls LanguageRuntime.GeneratePackage). The upstream hosts
// (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3, .../sdk/go/pulumi-language-go/v3)
// are not served by the Go module proxy this project reaches; the code generators they call are,
// in github.com/pulumi/pulumi/pkg/v3/codegen. This host binds the schema the CLI sends, runs the
// generator and writes its files; it runs no program (tools/README.md).
package host

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is set with -ldflags "-X ck8s-gpu.local/tools/sdkgen/host.version=..." by tools/build.sh.
var version = "0.0.0-dev"

// Generator is one language's code generator: the SDK's files by path, relative to its folder.
type Generator func(pkg *schema.Package, req *pulumirpc.GeneratePackageRequest,
	loader schema.ReferenceLoader) (map[string][]byte, error)

type server struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	name     string
	generate Generator
}

// Serve runs the host for `language` until the engine stops it.
func Serve(language string, generate Generator) {
	name := "pulumi-language-" + language
	flag.String("tracing", "", "ignored")
	flag.String("root", "", "ignored")
	flag.Parse() // the engine's address (the last argument) is not needed: nothing is run
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, &server{name: name, generate: generate})
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port) // the engine reads the port from the first line of stdout
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func (s *server) Handshake(
	context.Context, *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (s *server) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (s *server) GeneratePackage(
	ctx context.Context, req *pulumirpc.GeneratePackageRequest,
) (*pulumirpc.GeneratePackageResponse, error) {
	loader, err := schema.NewLoaderClient(req.GetLoaderTarget())
	if err != nil {
		return nil, fmt.Errorf("%s: schema loader: %w", s.name, err)
	}
	defer loader.Close()
	var spec schema.PackageSpec
	if err := json.Unmarshal([]byte(req.GetSchema()), &spec); err != nil {
		return nil, fmt.Errorf("%s: schema: %w", s.name, err)
	}
	pkg, diags, err := schema.BindSpecWithContext(ctx, spec, loader, schema.ValidationOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: bind schema: %w", s.name, err)
	}
	if diags.HasErrors() {
		return &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}, nil
	}
	files, err := s.generate(pkg, req, loader)
	if err != nil {
		return nil, fmt.Errorf("%s: generate: %w", s.name, err)
	}
	for name, data := range files {
		path := filepath.Join(req.GetDirectory(), name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil { //nolint:gosec // an SDK's sources
			return nil, err
		}
	}
	return &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}, nil
}
