"""kind preview clusters: the generated config, its strict schema and the create/delete scripts."""
