"""What follows from the settings for every platform (the derived-facts layer): the cluster's GPU
facts, the feature gates per track, GPU node labels and tolerations, EFA per pool."""
