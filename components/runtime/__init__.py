"""How the package behaves as a process: files written whole, readable failures under the Pulumi
engine, one module tree whichever name imported it (tables layer: standard library only)."""
