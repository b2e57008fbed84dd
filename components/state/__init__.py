"""Pulumi state surgery the CLI offers, as pure functions over an exported deployment."""
