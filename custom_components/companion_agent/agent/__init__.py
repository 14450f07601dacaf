"""The conversation agent's glue: personas, HA's tools and guard rules, the ChatLog, health."""
