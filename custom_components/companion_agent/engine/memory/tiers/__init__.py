"""Memory tiers: the recent window, session summaries, and extraction from one exchange."""
