"""Tools: contracts, the registry that runs them, and the guard in front of them."""
