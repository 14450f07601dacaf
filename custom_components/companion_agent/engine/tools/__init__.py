"""Tools: contracts, the registry that validates and runs them, and what goes back to the model."""
