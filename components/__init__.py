"""ck8s-gpu: Pulumi components for GPU Kubernetes on Canonical Kubernetes."""

from pathlib import Path

# The checkout (or installed tree) holding __main__.py, charts/ and stacks/: one definition for all.
PROJECT_DIR = Path(__file__).resolve().parent.parent
