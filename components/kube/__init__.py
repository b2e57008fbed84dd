"""Talking to a cluster from inside the Pulumi program (dynamic resources) and the CLI."""
