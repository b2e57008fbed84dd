"""Per-region stamping: one stack per region from a template stack plus per-region overrides.

Pure decision logic (merge, region-scoped derivation, stack-file rendering, what to create or
update, summary and exit code) lives in small modules; the Pulumi Automation API sits behind
`backend.StackBackend`, which tests replace with a fake.
"""
