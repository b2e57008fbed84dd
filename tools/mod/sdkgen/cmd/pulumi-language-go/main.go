// Command pulumi-language-go generates Go SDKs for `pulumi package gen-sdk` (package host).
package main

import (
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"ck8s-gpu.local/tools/sdkgen/host"
)

func main() {
	host.Serve("go", func(pkg *schema.Package, req *pulumirpc.GeneratePackageRequest,
		_ schema.ReferenceLoader,
	) (map[string][]byte, error) {
		return gogen.GeneratePackage("pulumi-language-go", pkg, req.GetLocalDependencies())
	})
}
