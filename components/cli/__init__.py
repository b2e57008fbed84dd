"""The `ck8s-gpu` command line: one module per subcommand (main.py registers them)."""
