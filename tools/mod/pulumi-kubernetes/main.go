// Command pulumi-resource-kubernetes serves the Kubernetes resource provider.
//
// Upstream's cmd/pulumi-resource-kubernetes embeds files made by `go generate`
// (schema-embed.json, terraform-mapping-embed.json) that its module zip does not contain, so it
// cannot be built from the module proxy as is. tools/build.sh builds this package instead, in a
// staging copy of this directory where it has written those two files from the schema.json and
// terraform-mapping.json the provider module does ship (compacted, schema version set).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
