"""The guard, in the order a confirmed unlock reads: policy, confirmations/, executor (→ audit)."""
