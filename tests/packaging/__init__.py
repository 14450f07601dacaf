"""Requirements: what Home Assistant installs for us, checked against its releases' pins."""
