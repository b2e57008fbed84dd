//go:build tools

// Build-only wrapper: the Prometheus Operator that kube-prometheus-stack 88.5.3 runs (appVersion
// v0.93.1), for the workload-metrics discovery scenario (tests/integration/test_keda_local.py).
package tools

import _ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
