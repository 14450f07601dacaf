"""The knowledge graph on Neo4j (or another Bolt server) through the official async driver."""
