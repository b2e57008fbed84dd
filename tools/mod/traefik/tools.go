//go:build tools

// Package tools pins the main package tools/build.sh builds from this wrapper.
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
