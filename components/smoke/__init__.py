"""In-cluster smoke test of the DRA GPU allocation path.

Pure parts: `expectations` (what must be true, from settings + ClusterFacts), `values` (chart
values and the run id), `probe` (what a container printed), `verifier` (one check per hop),
`report` (CTRF-like JSON, summary table). Cluster parts: `collect` (REST gateway, snapshot),
`run` (resume Jobs, barrier, collect, verify, clean up). Pulumi parts: `provider` (dynamic
resource that gates `pulumi up`) and `component` (SmokeTest).
"""
