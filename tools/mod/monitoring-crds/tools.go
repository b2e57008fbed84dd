//go:build tools

// Package tools keeps the two modules this wrapper exists for in go.mod (`go mod tidy`).
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
