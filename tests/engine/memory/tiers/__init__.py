"""Tests of the memory tiers: the recent window, summaries, extraction."""
