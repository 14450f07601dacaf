"""Real peers the tests and the demo talk to over loopback."""
