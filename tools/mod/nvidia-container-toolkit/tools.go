//go:build tools

// Build-only wrapper: the NVIDIA Container Toolkit's nvidia-ctk and its runtimes, for the node tier
// (tools/nodetier.py runs the node script's runtime chain and a pod with each RuntimeClass the
// GPU Operator creates; see tools/README.md).
package tools

import (
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime-hook"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.cdi"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.legacy"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk"
)
