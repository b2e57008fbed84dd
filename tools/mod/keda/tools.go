//go:build tools

// Build-only wrapper: KEDA's operator and metrics adapter (the pod-autoscaling add-on's controllers,
// ADR 0051) for the local tier's CI scenario (tests/integration/test_keda_local.py; tools/README.md).
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
