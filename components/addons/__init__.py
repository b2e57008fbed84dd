"""GPU software stack as add-ons: specs (one module each), catalog, graph, and the AddonSet."""
