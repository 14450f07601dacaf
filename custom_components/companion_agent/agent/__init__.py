"""The conversation agent's glue: personas, the ChatLog stream, spoken lines, model health."""
