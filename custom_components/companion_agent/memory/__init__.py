"""Memory glue: the backend the options name, who may touch what, the memory services."""
