"""The memory stores (embedded SQLite, mem0, Neo4j) and what they share at their boundary."""
