// kind-config-check FILE: exit 0 and print "ok" when kind v0.30.0 would accept FILE as a cluster
// config; otherwise print kind's error to stderr and exit 1.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kind/pkg/internal/apis/config/encoding"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kind-config-check FILE")
		os.Exit(2)
	}
	// Load decodes strictly (unknown fields are errors) and applies kind's defaults; Validate is
	// the same check `kind create cluster` runs before touching Docker.
	cfg, err := encoding.Load(os.Args[1])
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ok")
}
