"""Tests of the token-level output pipeline (engine only, no Home Assistant)."""
