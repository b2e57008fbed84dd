"""The component provider: GpuAddons and GpuCluster for every Pulumi language (ADR 0045).

- args.py: the inputs as the schema shows them (TypedDicts and Enums);
- resources.py: the components the provider constructs, the Python API's own (components/api.py);
- mapping.py: the engine's inputs -> the Python API's args (pure);
- schema.py: the package schema (`schema()`, pure), golden in tests/golden/provider/schema.json;
- compat.py: which schema changes break consumers (pure);
- server.py, main.py: the `pulumi-resource-ck8s-gpu` executable.
"""
