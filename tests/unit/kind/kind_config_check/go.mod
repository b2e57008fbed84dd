// Validates a kind config with kind's own loader and validator (what `kind create cluster` runs
// first). The module path sits under sigs.k8s.io/kind/pkg/ so Go lets it import kind's internal
// config packages; it is a test tool, never part of the product. Keep the kind version equal to
// components/tables/pins.py TOOLS["kind"] (tests/unit/kind/test_kind_config_real_parser.py checks).
module sigs.k8s.io/kind/pkg/ck8sgpucheck

go 1.22

require sigs.k8s.io/kind v0.30.0

require (
	github.com/pkg/errors v0.9.1 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
)
