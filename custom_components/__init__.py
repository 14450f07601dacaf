"""Custom integrations for Home Assistant."""
