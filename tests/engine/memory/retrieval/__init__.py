"""Tests of memory retrieval: keywords, and what a turn reads."""
