"""The guard: policy, held calls and their confirmations, the executor in front of the tools."""
