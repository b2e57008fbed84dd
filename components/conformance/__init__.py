"""`ck8s-gpu conformance`: the CNCF Kubernetes AI Conformance checklist run against a live cluster."""
