"""ck8s-gpu: Pulumi components for GPU Kubernetes on Canonical Kubernetes."""
