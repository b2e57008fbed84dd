"""Facts and locations with no opinion, the bottom layer (docs/architecture.md, Layers): the pin
table, GPU instance types, label keys, resource type tokens, names that fit AWS's limits, paths."""
