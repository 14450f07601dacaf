"""The memory outbox: the durable queue of writes, its file, its entries, and tombstones."""
