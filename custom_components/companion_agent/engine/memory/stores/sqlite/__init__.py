"""The embedded memory store: one SQLite file with FTS5 keywords, vectors and a graph."""
