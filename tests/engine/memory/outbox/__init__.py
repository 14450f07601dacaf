"""Tests of the durable memory outbox."""
