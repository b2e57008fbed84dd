//go:build tools

// Build-only wrapper: the Prometheus server KEDA's prometheus scaler queries in the local tier's
// CI scenario (tests/integration/test_keda_local.py; tools/README.md).
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
