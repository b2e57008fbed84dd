"""Day-2 operations: Kubernetes track upgrades, node rolls and node replacement (ADR 0015, 0016).

Pure modules decide (skew rules, step plans, drain verdicts); `executor` runs the decisions
against a `Runner` (SSM on AWS, the k8s-snap fake in tests); `resources` holds the thin dynamic
resources `pulumi up` drives them through.
"""
