"""CP-SAT planners: each builds a model from the cluster, solves it, extracts a plan and validates it."""
