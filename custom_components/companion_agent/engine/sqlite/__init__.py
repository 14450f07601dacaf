"""The engine's SQLite files: one thread and one connection per file, checked when opened.

Every SQLite file the engine owns (the embedded memory store, the memory outbox, the
exchange store) runs on its own ``SQLiteWorker``: one dedicated thread holds the file's one
connection, and every blocking call on the file runs there. The file is opened by its
owner's ``Opener`` (``open_checked`` with the owner's check, schema and durability): a file
that is not SQLite, is damaged or is someone else's is moved aside (``move_aside``) and a
fresh one starts; a file that is merely locked or unreadable is left where it is.
"""

from __future__ import annotations

from .opening import (
    BUSY_TIMEOUT,
    Opener,
    Prepare,
    SQLiteFileError,
    Synchronous,
    check_tables,
    move_aside,
    open_checked,
    quick_check,
)
from .worker import MAX_PENDING, Failure, SQLiteWorker, in_transaction

__all__ = [
    "BUSY_TIMEOUT",
    "MAX_PENDING",
    "Failure",
    "Opener",
    "Prepare",
    "SQLiteFileError",
    "SQLiteWorker",
    "Synchronous",
    "check_tables",
    "in_transaction",
    "move_aside",
    "open_checked",
    "quick_check",
]
