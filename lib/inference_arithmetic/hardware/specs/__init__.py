"""Peak figures of the registry's accelerators, one JSON file each, every figure with its source."""
