"""The mem0 memory store (``mem0ai``) on Qdrant, run on a worker thread of its own."""
