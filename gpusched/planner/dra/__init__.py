"""DRA: the ResourceSlices a driver publishes, CEL selectors, and the structured allocator kube-scheduler runs."""
