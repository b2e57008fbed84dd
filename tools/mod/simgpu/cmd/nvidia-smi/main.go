// Command nvidia-smi is a static simulated nvidia-smi for containers on simulated GPU nodes.
// It supports -L and --query-gpu=index,uuid,name,memory.total --format=csv[,noheader][,nounits];
// see internal/smi. The kubelet plugin's CDI spec mounts it at /usr/bin/nvidia-smi.
package main

import (
	"os"

	"ck8s-gpu.local/tools/simgpu/internal/smi"
)

func main() {
	table := os.Getenv(smi.TableEnv)
	if table == "" {
		table = smi.DefaultTable
	}
	os.Exit(smi.Run(os.Args[1:], smi.Env{DevDir: "/dev", Stat: smi.Stat, TablePath: table}, os.Stdout))
}
