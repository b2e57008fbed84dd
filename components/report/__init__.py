"""Reports over a running cluster's history: what its GPUs cost and did (`ck8s-gpu report`)."""
